import RoboscopeDomain

/// What the service requires of a token's claims, and how they make a principal
/// (docs/security.md, "The principal"). Pure: the verifier hands it claims whose
/// signature it has checked.
public struct ClaimRules: Sendable {
    /// The claim naming the tenant (`tenant`, or an identity provider's `org_id`).
    public var tenantClaim = "tenant"
    /// Seconds of clock skew allowed on `exp` and `nbf`.
    public var leeway: Double = 60
    /// When set, `aud` must name it (a string, or an array holding it).
    public var audience: String?
    /// When set, `iss` must equal it.
    public var issuer: String?
    /// When set, every token is this tenant's: its tenant claim may be absent, and naming
    /// another is refused (an issuers file's entry for one customer's identity provider).
    public var pinnedTenant: String?
    /// Whether `operator` in `scope` counts (the deployment's own issuers), or is ignored
    /// like an unknown word (a customer's identity provider can never grant it).
    public var grantsOperator = true

    public init() {}

    public static let maxSubjectLength = Principal.maxSubjectLength
    /// The last second a numeric date may name (9999-12-31T23:59:59Z): past it a date
    /// means nothing a clock can reach, and its microseconds would overflow the arithmetic
    /// of every check that follows (docs/security.md, "Failing closed").
    public static let latestNumericDate: Double = 253_402_300_799

    /// The principal of a verified JWT's claims at `now` (seconds since 1970).
    public func principal(_ claims: JSONObject, now: Double) throws -> Principal {
        guard let exp = try Self.numericDate("exp", in: claims) else { throw AuthenticationFailure("token has no exp") }
        if exp + leeway <= now { throw AuthenticationFailure("token expired", kind: .expired) }
        if let nbf = try Self.numericDate("nbf", in: claims), nbf - leeway > now {
            throw AuthenticationFailure("token not valid yet (nbf)")
        }
        let iat = try Self.numericDate("iat", in: claims)
        if let audience {
            let named: [String] =
                switch claims["aud"] {
                case .string(let one)?: [one]
                case .array(let many)?: many.compactMap(\.stringValue)
                default: []
                }
            guard named.contains(audience) else { throw AuthenticationFailure("token aud does not name \(audience)") }
        }
        if let issuer {
            guard claims["iss"]?.stringValue == issuer else {
                throw AuthenticationFailure("token iss is not \(issuer)")
            }
        }
        var tenant = claims[tenantClaim]
        if let pinnedTenant {
            if let named = tenant, named != .null, named.stringValue != pinnedTenant {
                throw AuthenticationFailure(
                    "token \(tenantClaim) is not \(pinnedTenant), the only tenant its issuer may name")
            }
            tenant = .string(pinnedTenant)
        }
        var principal = try Self.principal(
            subject: claims["sub"], tenant: tenant, tenantClaim: tenantClaim, scope: claims["scope"],
            spaces: claims["spaces"], grantsOperator: grantsOperator
        )
        principal.issuer = claims["iss"]?.stringValue
        principal.expiresAt = Timestamp(microsecondsSinceEpoch: Int64((exp * 1_000_000).rounded(.down)))
        principal.issuedAt = iat.map { Timestamp(microsecondsSinceEpoch: Int64(($0 * 1_000_000).rounded(.down))) }
        return principal
    }

    /// A numeric date claim (RFC 7519 section 2), nil when absent; refused when it is not a
    /// number of seconds from 0 to `latestNumericDate`.
    static func numericDate(_ name: String, in claims: JSONObject) throws -> Double? {
        guard let value = claims[name] else { return nil }
        guard let seconds = value.doubleValue, seconds.isFinite else {
            throw AuthenticationFailure("token \(name) is not a number")
        }
        guard (0...latestNumericDate).contains(seconds) else {
            throw AuthenticationFailure("token \(name) is outside 0 ... \(Int(latestNumericDate)) (year 9999)")
        }
        return seconds
    }

    /// `sub`, the tenant, `scope` and `spaces` as the table of docs/security.md reads them
    /// (static tokens name the same fields).
    public static func principal(
        subject: JSONValue?, tenant: JSONValue?, tenantClaim: String, scope: JSONValue?, spaces: JSONValue?,
        grantsOperator: Bool = true
    ) throws -> Principal {
        guard let subject = subject?.stringValue, !subject.isEmpty, subject.count <= maxSubjectLength else {
            throw AuthenticationFailure("token sub must be a string of 1 to \(maxSubjectLength) characters")
        }
        // The subject goes into logs, audit entries and lock holders: no line breaks or
        // terminal escapes there.
        guard !subject.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw AuthenticationFailure("token sub must hold no control characters")
        }
        guard let tenant = tenant?.stringValue, TenantName.isValid(tenant) else {
            throw AuthenticationFailure(
                "token \(tenantClaim) must be 1 to \(TenantName.maxLength) characters of A-Z a-z 0-9 . _ : -")
        }
        let scopes: Scopes
        switch scope {
        case nil, .null?: scopes = Scopes(claim: nil)
        case .string(let words)?: scopes = Scopes(claim: words, ignoring: grantsOperator ? [] : [.operator])
        default: throw AuthenticationFailure("token scope must be a space-separated string")
        }
        var visible: Set<EntityID>?
        switch spaces {
        case nil, .null?: visible = nil
        case .array(let items)?:
            guard items.count <= 10_000 else {
                throw AuthenticationFailure("token spaces names more than 10000 spaces")
            }
            var ids = Set<EntityID>()
            for item in items {
                guard let text = item.stringValue, let id = EntityID(text) else {
                    throw AuthenticationFailure("token spaces must be an array of space ids (UUIDs)")
                }
                ids.insert(id)
            }
            visible = ids
        default: throw AuthenticationFailure("token spaces must be an array of space ids (UUIDs)")
        }
        return Principal(subject: subject, tenant: tenant, scopes: scopes, spaces: visible)
    }
}

/// Why a token was refused (the message goes into the 401 body).
public struct AuthenticationFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of refusal, for the refusal counters and logs (`roboscope_ws_refusals_total`).
    public enum Kind: String, Sendable {
        case missingToken = "missing_token"
        case invalidToken = "invalid_token"
        case expired, revoked
        case keyRetired = "key_retired"
    }

    public var reason: String
    public var kind: Kind
    public init(_ reason: String, kind: Kind = .invalidToken) {
        self.reason = reason
        self.kind = kind
    }
    public var description: String { reason }
}
