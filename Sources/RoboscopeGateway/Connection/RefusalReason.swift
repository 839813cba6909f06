import RoboscopeAuth
import WebSocketCodec

/// Why the gateway refused an upgrade or closed a connection with 4001 or 4003: the
/// `reason` label of `roboscope_ws_refusals_total` and the field of the refusal's log line.
enum RefusalReason: String, Sendable, CaseIterable {
    case missingToken = "missing_token"
    case invalidToken = "invalid_token"
    case expired, revoked
    case keyRetired = "key_retired"
    case disconnected, forbidden
    case rateLimited = "rate_limited"
    /// Upgrades refused before any token: an unknown path, a Host or Origin not allowed,
    /// a malformed handshake, a server shutting down.
    case notFound = "not_found"
    case hostNotAllowed = "host_not_allowed"
    case malformed, unavailable

    init(_ kind: AuthenticationFailure.Kind) {
        switch kind {
        case .missingToken: self = .missingToken
        case .invalidToken: self = .invalidToken
        case .expired: self = .expired
        case .revoked: self = .revoked
        case .keyRetired: self = .keyRetired
        }
    }

    /// An upgrade refused by the handshake parser, by its status.
    init(rejection: UpgradeRejection) {
        switch rejection.status {
        case 401: self = .invalidToken
        case 403: self = .forbidden
        case 404: self = .notFound
        case 421: self = .hostNotAllowed
        case 429: self = .rateLimited
        case 503: self = .unavailable
        default: self = .malformed
        }
    }
}
