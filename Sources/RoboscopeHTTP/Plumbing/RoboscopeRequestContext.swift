import Hummingbird
import Logging
import NIOCore
import RoboscopeDomain
import RoboscopePostgres

/// The request context of every route: Hummingbird's core storage plus the peer address.
public struct RoboscopeRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The client's address: the peer's, or the one a trusted proxy names in
    /// `X-Forwarded-For` (set by `ClientAddressMiddleware`).
    public var clientAddress: String?
    /// Set once by `ErrorMiddleware`: the id returned in `X-Request-Id` and stored in
    /// the metadata of every event the request appends.
    public var requestID: String?
    /// Set by `PrincipalMiddleware` for every `/api/v1` request; until then it may do
    /// nothing (no tenant, no scope).
    public var principal = Principal(subject: "anonymous", tenant: "", scopes: Scopes([]), spaces: [])
    /// Set by `IdempotencyMiddleware` for a write with an `Idempotency-Key`.
    public var idempotency: IdempotencyClaim?
    /// Who the request was, once known: shared by every copy of the context.
    public let caller = RequestCaller()

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        clientAddress = remoteAddress?.ipAddress
    }

    /// Bodies are collected by `RequestBody` with its own limit.
    public var maxUploadSize: Int { Int.max }
}
