import HTTPTypes
import Hummingbird
import RoboscopeAuth
import RoboscopeDomain

/// With authentication on, every `/api/v1` request needs a bearer token: 401 without a
/// valid one, 403 for a write with a read-only token. The token's subject becomes the
/// actor of the events the request causes.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = RoboscopeRequestContext
    let verifier: TokenVerifier

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let credentials: Credentials
        do {
            credentials = try verifier.verify(authorization: request.headers[.authorization])
        } catch let failure as AuthenticationFailure {
            throw DomainError(.unauthorized, failure.reason)
        }
        if credentials.scope == .read, ![.get, .head, .options].contains(request.method) {
            throw DomainError(.forbidden, "the token of \(credentials.subject) is read-only")
        }
        var context = context
        context.credentials = credentials
        return try await next(request, context)
    }
}

extension DomainError.Code {
    /// No bearer token, or one that does not verify.
    public static let unauthorized = DomainError.Code("unauthorized")
    /// A valid token whose scope does not allow the action.
    public static let forbidden = DomainError.Code("forbidden")
}
