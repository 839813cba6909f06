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

    public init(
        id: EntityID, tenant: String?, subject: String?, keyID: String?, issuedBefore: Timestamp, reason: String,
        createdAt: Timestamp, createdBy: String
    ) {
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

/// A revocation as stored and as the API and the audit trail show it: the revocation,
/// and when and by whom it was lifted.
public struct StoredRevocation: Sendable, Hashable {
    public var revocation: Revocation
    public var liftedAt: Timestamp?
    public var liftedBy: String?

    public init(revocation: Revocation, liftedAt: Timestamp? = nil, liftedBy: String? = nil) {
        self.revocation = revocation
        self.liftedAt = liftedAt
        self.liftedBy = liftedBy
    }
}

extension StoredRevocation: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("id"); writer.value(revocation.id)
            writer.key("tenant"); writer.value(revocation.tenant)
            writer.key("subject"); writer.value(revocation.subject)
            writer.key("kid"); writer.value(revocation.keyID)
            writer.key("issued_before"); writer.value(revocation.issuedBefore)
            writer.key("reason"); writer.value(revocation.reason)
            writer.key("created_at"); writer.value(revocation.createdAt)
            writer.key("created_by"); writer.value(revocation.createdBy)
            writer.key("lifted_at"); writer.value(liftedAt)
            writer.key("lifted_by"); writer.value(liftedBy)
        }
    }
}

extension StoredRevocation: Decodable {
    enum CodingKeys: String, CodingKey {
        case id, tenant, subject, kid, reason
        case issuedBefore = "issued_before"
        case createdAt = "created_at"
        case createdBy = "created_by"
        case liftedAt = "lifted_at"
        case liftedBy = "lifted_by"
    }

    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        revocation = Revocation(
            id: try fields.decode(EntityID.self, forKey: .id),
            tenant: try fields.decodeIfPresent(String.self, forKey: .tenant),
            subject: try fields.decodeIfPresent(String.self, forKey: .subject),
            keyID: try fields.decodeIfPresent(String.self, forKey: .kid),
            issuedBefore: try fields.decode(Timestamp.self, forKey: .issuedBefore),
            reason: try fields.decode(String.self, forKey: .reason),
            createdAt: try fields.decode(Timestamp.self, forKey: .createdAt),
            createdBy: try fields.decode(String.self, forKey: .createdBy)
        )
        liftedAt = try fields.decodeIfPresent(Timestamp.self, forKey: .liftedAt)
        liftedBy = try fields.decodeIfPresent(String.self, forKey: .liftedBy)
    }
}
