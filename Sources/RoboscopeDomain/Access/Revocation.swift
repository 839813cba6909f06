/// An operator's or a tenant administrator's "these tokens no longer hold"
/// (`POST /admin/revocations`, docs/operations.md "Running many customers"): every token
/// of a tenant, or of one of its subjects, issued before an instant; or every token signed
/// by one key. Matching is pure; the list lives in Postgres and in every process's memory.
public struct Revocation: Hashable, Sendable {
    public var id: EntityID
    /// The tenant whose tokens it ends; nil only for a key's revocation (`kid`).
    public var tenant: String?
    /// The one subject of the tenant whose tokens it ends (nil: all of them).
    public var subject: String?
    /// The `kid` whose tokens it ends (operators only).
    public var keyID: String?
    /// Tokens issued (`iat`) before this instant match; a token without `iat` always does.
    public var issuedBefore: Timestamp
    public var reason: String
    public var createdAt: Timestamp
    /// `tenant/subject` of the principal that made it.
    public var createdBy: String

    public init(id: EntityID, tenant: String?, subject: String?, keyID: String?, issuedBefore: Timestamp, reason: String,
                createdAt: Timestamp, createdBy: String) {
        self.id = id
        self.tenant = tenant
        self.subject = subject
        self.keyID = keyID
        self.issuedBefore = issuedBefore
        self.reason = reason
        self.createdAt = createdAt
        self.createdBy = createdBy
    }

    /// Whether `principal`'s token no longer holds because of this revocation.
    public func matches(_ principal: Principal) -> Bool {
        if let keyID, principal.keyID != keyID { return false }
        if let tenant, principal.tenant != tenant { return false }
        if let subject, principal.subject != subject { return false }
        guard let issuedAt = principal.issuedAt else { return true }
        return issuedAt < issuedBefore
    }

    /// Longest `reason`, in characters.
    public static let maxReasonLength = 500
}
