import Hummingbird
import Logging
import NIOCore
import RoboscopeDomain
import RoboscopePostgres

/// The request context of every route: Hummingbird's core storage plus the peer address.
public struct RoboscopeRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// Set once by `ErrorMiddleware`: the id returned in `X-Request-Id` and stored in
    /// the metadata of every event the request appends.
    public var requestID: String?
    /// Set by `PrincipalMiddleware` for every `/api/v1` request; until then it may do
    /// nothing (no tenant, no scope).
    public var principal = Principal(subject: "anonymous", tenant: "", scopes: Scopes([]), spaces: [])
    /// Set by `IdempotencyMiddleware` for a write with an `Idempotency-Key`.
    public var idempotency: IdempotencyClaim?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// Bodies are collected by `RequestBody` with its own limit.
    public var maxUploadSize: Int { Int.max }
}
