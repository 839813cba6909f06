import Foundation
import RoboscopeAuth
import RoboscopeDomain
import WebSocketCodec

/// Who may open a socket, and as whom: the upgrade's path, its `Origin`, the client's
/// connection cap and its token; and what a token (on the upgrade or in an `auth` op)
/// is worth. The shard asks and carries the answer out (counting the client, setting
/// the connection's principal); nothing here touches a socket or a shard, so tests
/// decide upgrades alone (`AdmissionPolicyTests`).
struct AdmissionPolicy: Sendable {
    let configuration: GatewayConfiguration

    enum Decision {
        case refused(UpgradeRejection, RefusalReason)
        /// No `Authorization` header, authentication on: the `auth` op must follow.
        case awaitingToken
        /// The connection acts for `principal` (anonymous in the default tenant without
        /// authentication).
        case admitted(Principal)
    }

    /// The address a connection counts against: the client a trusted proxy names in
    /// `X-Forwarded-For`, else the peer.
    func client(of request: UpgradeRequest, peer: String) -> String {
        configuration.trustedProxies.clientAddress(peer: peer, forwardedFor: request.headers["x-forwarded-for"]) ?? peer
    }

    /// Whether the upgrade proceeds; `connectionsOfClient`: the client's open connections,
    /// this one included.
    func decide(_ request: UpgradeRequest, connectionsOfClient: Int, isShuttingDown: Bool) -> Decision {
        if isShuttingDown {
            return .refused(UpgradeRejection(status: 503, message: "server is shutting down"), .unavailable)
        }
        switch request.path {
        case "/api/v1/ws": break
        case "/api/v1/ws/echo" where configuration.echo: break
        default:
            let rejection = UpgradeRejection(
                status: 404, message: "no WebSocket endpoint at \(request.path.prefix(100))")
            return .refused(rejection, .notFound)
        }
        let host = request.headers["host"]
        if configuration.authentication == nil, !configuration.allowedHosts.permits(authority: host) {
            return .refused(
                UpgradeRejection(status: 421, message: "this Host is not one of --allowed-hosts"), .hostNotAllowed)
        }
        if let origin = request.headers["origin"],
            !configuration.allowedOrigins.permits(origin: origin, host: request.headers["host"])
        {
            let message = "Origin \(origin.prefix(100)) may not open a socket here; list it in --allowed-origins"
            return .refused(UpgradeRejection(status: 403, message: message), .forbidden)
        }
        if connectionsOfClient > configuration.maxConnectionsPerClient {
            let message = "more than \(configuration.maxConnectionsPerClient) connections from this client"
            return .refused(UpgradeRejection(status: 429, message: message), .rateLimited)
        }
        guard let verifier = configuration.authentication else {
            return .admitted(.unauthenticated(actor: "anonymous", tenant: configuration.defaultTenant))
        }
        // Browsers cannot set the header on a WebSocket: they send the `auth` op instead.
        guard let authorization = request.headers["authorization"] else { return .awaitingToken }
        switch verified({ try verifier.verify(authorization: authorization) }) {
        case .success(let principal): return .admitted(principal)
        case .failure(let refusal):
            return .refused(UpgradeRejection(status: 401, message: refusal.reason), refusal.kind)
        }
    }

    /// A token's verdict; an unknown `kid` asks for the key set early (the next attempt
    /// may find the key).
    func verified(_ verify: () throws -> Principal) -> Result<Principal, TokenRefusal> {
        do {
            return .success(try verify())
        } catch let failure as AuthenticationFailure {
            return .failure(TokenRefusal(reason: failure.reason, kind: RefusalReason(failure.kind)))
        } catch {
            if let verifier = configuration.authentication, let source = verifier.keySource {
                Task { await source.refreshEarly(into: verifier) }
            }
            return .failure(TokenRefusal(reason: "token kid is not in the key set"))
        }
    }

    /// The instant at which `principal`'s token stops holding: its `exp` plus the leeway
    /// every request gets, on the clock of `now` (`wallNow` is the same moment as wall time).
    func validUntil<Instant: InstantProtocol>(of principal: Principal, now: Instant, wallNow: Date) -> Instant?
    where Instant.Duration == Duration {
        guard let expiresAt = principal.expiresAt else { return nil }
        let leeway = configuration.authentication?.rules.leeway ?? 0
        let wallMicroseconds = Int64((wallNow.timeIntervalSince1970 * 1_000_000).rounded(.down))
        let remaining = expiresAt.microsecondsSinceEpoch + Int64(leeway * 1_000_000) - wallMicroseconds
        return now.advanced(by: min(.microseconds(remaining), Self.longestDeadline))
    }

    /// The furthest a token's expiry is scheduled: a date in the year 9999 must not become
    /// a timer of nanoseconds past `Int64` (no connection lives ten years anyway).
    static let longestDeadline = Duration.seconds(10 * 365 * 86_400)
}

/// Why a token was refused (the reason goes into a 401 or a 4001 close).
struct TokenRefusal: Error {
    var reason: String
    var kind: RefusalReason = .invalidToken
}
