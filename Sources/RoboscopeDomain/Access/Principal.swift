/// Who a request or a WebSocket connection acts for: read from its bearer token when
/// authentication is on, else the deployment's one tenant with every scope
/// (docs/security.md).
public struct Principal: Hashable, Sendable {
    /// The actor of every event it causes, its presence user, its lock holder.
    public var subject: String
    /// The organization whose spaces (and everything under them) it sees.
    public var tenant: String
    public var scopes: Scopes
    /// The only spaces of its tenant it sees; nil sees them all.
    public var spaces: Set<EntityID>?
    /// When its token stops being valid (its `exp`); nil never (static tokens, no authentication).
    public var expiresAt: Timestamp?
    /// When its token was issued (`iat`); nil when it names none (static tokens): a
    /// revocation of its tenant or subject then matches it whatever its `issued_before`.
    public var issuedAt: Timestamp?
    /// The JWK Set key that signed its token (`kid`); nil for the HS256 secret and static tokens.
    public var keyID: String?
    /// Its token's `iss` (nil for static tokens): with an issuers file, whose keys signed it.
    public var issuer: String?

    public init(
        subject: String, tenant: String, scopes: Scopes, spaces: Set<EntityID>? = nil, expiresAt: Timestamp? = nil
    ) {
        self.subject = subject
        self.tenant = tenant
        self.scopes = scopes
        self.spaces = spaces
        self.expiresAt = expiresAt
    }

    /// Longest `sub`, in characters.
    public static let maxSubjectLength = 200

    /// Without authentication: one tenant, every scope, the actor named by the client.
    public static func unauthenticated(actor: String, tenant: String) -> Principal {
        Principal(subject: actor, tenant: tenant, scopes: .all)
    }

    /// Rule 2: a place outside the principal's tenant, or outside its `spaces`, does not
    /// exist for it.
    public func sees(_ place: Place) -> Bool {
        guard place.tenant == tenant else { return false }
        guard let spaces else { return true }
        return spaces.contains(place.spaceID)
    }

    /// Rule 3: a scope the principal lacks is a 403 naming it.
    public func require(_ scope: Scope) throws {
        guard scopes.contains(scope) else { throw DomainError.forbidden(needing: scope) }
    }

    /// Whether it may see or do less than `previous` (a refreshed token): a scope lost,
    /// or `spaces` narrowed. What it gained does not matter.
    public func narrows(_ previous: Principal) -> Bool {
        if !previous.scopes.isSubset(of: scopes) { return true }
        guard let spaces else { return false }
        guard let before = previous.spaces else { return true }
        return !spaces.isSuperset(of: before)
    }

    /// Visibility first (else `unknown`, exactly what an id that never existed gets),
    /// then the scope: the order rule 3 fixes.
    public func require(_ scope: Scope, in place: Place?, otherwise unknown: @autoclosure () -> DomainError) throws {
        guard let place, sees(place) else { throw unknown() }
        try require(scope)
    }

    /// Whether it may act with `scope` in `place` (nil: a place that does not exist): the
    /// check `require(_:in:otherwise:)` makes, for a caller that only drops what fails it.
    public func may(_ scope: Scope, in place: Place?) -> Bool {
        (try? require(scope, in: place, otherwise: DomainError.forbidden(needing: scope))) != nil
    }
}

/// Where an entity lives: its space, and the tenant that owns the space. Both are fixed
/// when the entity is created (a marker never changes session, a session never changes
/// space, a space never changes tenant), so a place read once stays true.
public struct Place: Hashable, Sendable {
    public var spaceID: EntityID
    public var tenant: String

    public init(spaceID: EntityID, tenant: String) {
        self.spaceID = spaceID
        self.tenant = tenant
    }
}

/// A tenant's name: 1-128 characters of `[A-Za-z0-9._:-]`.
public enum TenantName {
    public static let maxLength = 128

    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maxLength
            && name.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
                    || byte == UInt8(ascii: "-")
            }
    }
}

extension DomainError {
    public static func forbidden(needing scope: Scope) -> DomainError {
        DomainError(
            .forbidden, "this needs the \(scope.rawValue) scope", details: ["scope_needed": .string(scope.rawValue)])
    }
}
