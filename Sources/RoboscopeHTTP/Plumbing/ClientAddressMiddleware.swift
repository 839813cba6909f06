import HTTPTypes
import Hummingbird
import RoboscopeDomain

/// Names the client of every request: the peer, or, when the peer is one of
/// `--trusted-proxies`, the address its `X-Forwarded-For` names (docs/security.md).
struct ClientAddressMiddleware: APIMiddleware {
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    let proxies: TrustedProxies

    func handle(_ request: Request, context: Context, next: Next) async throws -> Response {
        guard !proxies.networks.isEmpty else { return try await next(request, context) }
        var context = context
        context.clientAddress = proxies.clientAddress(
            peer: context.remoteAddress?.ipAddress,
            forwardedFor: request.headers[values: Self.forwardedFor].joined(separator: ",")
        )
        return try await next(request, context)
    }
}
