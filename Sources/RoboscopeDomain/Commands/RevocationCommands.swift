/// `POST /admin/revocations` decided (docs/operations.md "Running many customers"): who may
/// revoke what, and the revocation a body names. An operator revokes any tenant's tokens,
/// a subject's, or a key's (`kid`); an administrator only its own tenant's.
public enum RevocationCommands {
    /// Whose revocations a principal may make, list and lift.
    public enum Reach: Equatable, Sendable {
        /// Every tenant's, and keys' (the `operator` scope).
        case everyTenant
        /// Its own tenant's only (the `admin` scope).
        case tenant(String)

        /// Whether `tenant`'s revocations are within reach.
        public func covers(_ tenant: String?) -> Bool {
            switch self {
            case .everyTenant: true
            case .tenant(let own): tenant == own
            }
        }

        /// The tenant a listing is limited to (nil: all).
        public var tenantFilter: String? {
            switch self {
            case .everyTenant: nil
            case .tenant(let own): own
            }
        }

        /// The tenant a listing or a disconnect is limited to when its query names
        /// `asked`: that tenant if within reach (else 403 naming `operator`), else the
        /// reach's own filter.
        public func tenantFilter(asking asked: String?) throws -> String? {
            guard let asked else { return tenantFilter }
            guard TenantName.isValid(asked) else {
                throw DomainError(.invalidField, "query tenant: not a tenant name", field: "tenant")
            }
            guard covers(asked) else { throw DomainError.forbidden(needing: .operator) }
            return asked
        }
    }

    /// The principal's reach, else 403 naming `admin` (the least scope that has one).
    public static func reach(of principal: Principal) throws -> Reach {
        if principal.scopes.contains(.operator) { return .everyTenant }
        try principal.require(.admin)
        return .tenant(principal.tenant)
    }

    /// The audit trail's record of `stored` (`type`: created or lifted), appended in the
    /// transaction that stores it, on the revocation's own stream.
    public static func recorded(_ stored: StoredRevocation, _ type: EventType, _ context: CommandContext) -> AppendBatch
    {
        let stream = StreamRef(.tokenRevocation, stored.revocation.id)
        let created = type == .tokenRevocationCreated
        let event = PendingEvent(
            stream: stream, expectedVersion: created ? .noStream : .any, type: type,
            payload: .revocation(stored), metadata: context.metadata())
        return AppendBatch(events: [event], locks: [.exclusive(stream)])
    }

    /// The revocation `body` asks for, made by `principal` at `now` with id `id`.
    public static func revocation(
        _ body: FieldReader, by principal: Principal, id: EntityID, now: Timestamp
    ) throws
        -> Revocation
    {
        let reach = try reach(of: principal)
        let keyID = try body.string("kid", maxLength: 200)
        var tenant = try body.string("tenant", maxLength: TenantName.maxLength)
        let subject = try body.string("subject", maxLength: Principal.maxSubjectLength)
        if let tenant, !TenantName.isValid(tenant) {
            throw DomainError.invalid(
                "tenant", "must be 1 to \(TenantName.maxLength) characters of A-Z a-z 0-9 . _ : -")
        }
        if keyID != nil {
            guard reach == .everyTenant else { throw DomainError.forbidden(needing: .operator) }
            guard tenant == nil, subject == nil else {
                throw DomainError.invalid("kid", "names a key: give it alone, without tenant or subject")
            }
        } else {
            // An administrator's own tenant is the one meant when it names none.
            if tenant == nil, case .tenant(let own) = reach { tenant = own }
            guard let named = tenant else { throw DomainError.invalid("tenant", "is required (or kid, for a key)") }
            guard reach.covers(named) else { throw DomainError.forbidden(needing: .operator) }
        }
        let reason = try body.requiredString("reason", maxLength: Revocation.maxReasonLength)
        return Revocation(
            id: id, tenant: tenant, subject: subject, keyID: keyID,
            issuedBefore: try body.timestamp("issued_before") ?? now,
            reason: reason, createdAt: now, createdBy: "\(principal.tenant)/\(principal.subject)"
        )
    }
}
