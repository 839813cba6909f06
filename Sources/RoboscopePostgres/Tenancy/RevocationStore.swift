import RoboscopeDomain
import RoboscopeProofs

/// `public.token_revocations`: revocations made, listed, lifted (never deleted), and the
/// ones in force, which every process loads at start and whenever Postgres announces a
/// change on `roboscope_revocations` (`RevocationListener`).
public struct RevocationStore: Sendable {
    public let pool: PostgresPool
    public static let channel = "roboscope_revocations"
    /// Most revocations a listing returns (the newest).
    public static let listLimit = 1000

    /// Signs the revocations' audit events as `EventStore` signs every append.
    let signer: HistorySigner?

    public init(pool: PostgresPool, signer: HistorySigner? = nil) {
        self.pool = pool
        self.signer = signer
    }

    /// A revocation's columns, as every statement here selects or returns them.
    enum Column: Int, SelectedColumn {
        case id, tenant, subject, keyID, issuedBefore, reason, createdAt, createdBy, liftedAt, liftedBy

        var sql: String {
            switch self {
            case .id: "id"
            case .tenant: "tenant"
            case .subject: "subject"
            case .keyID: "kid"
            case .issuedBefore: "(extract(epoch FROM issued_before) * 1000000)::bigint"
            case .reason: "reason"
            case .createdAt: "(extract(epoch FROM created_at) * 1000000)::bigint"
            case .createdBy: "created_by"
            case .liftedAt: "(extract(epoch FROM lifted_at) * 1000000)::bigint"
            case .liftedBy: "lifted_by"
            }
        }
    }

    static let columns = Column.selectList

    /// Stores `revocation` (its `created_at` is the database's clock) and records it in the
    /// audit trail, in one transaction; the stored row. With a `claim`, the answer `answer`
    /// makes of the row is stored under its key, so a retry gets it instead of revoking twice.
    public func create(
        _ revocation: Revocation, _ context: CommandContext, claim: IdempotencyClaim?,
        answer: @escaping @Sendable (StoredRevocation) -> StoredAnswer
    ) async throws -> StoredRevocation {
        let signer = signer
        return try await pool.translatingErrors { connection in
            try connection.transaction {
                let result = try connection.query(
                    """
                    INSERT INTO public.token_revocations (id, tenant, subject, kid, issued_before, reason, created_by)
                    VALUES ($1::uuid, $2, $3, $4, to_timestamp($5::bigint / 1000000.0), $6, $7)
                    RETURNING \(Self.columns)
                    """,
                    [
                        revocation.id, revocation.tenant, revocation.subject, revocation.keyID,
                        revocation.issuedBefore.microsecondsSinceEpoch, revocation.reason, revocation.createdBy,
                    ]
                )
                let stored = try Self.row(result, 0)
                try EventStore.append(
                    RevocationCommands.recorded(stored, .tokenRevocationCreated, context),
                    claim: claim, answer: claim.map { _ in answer(stored) }, signer: signer, on: connection)
                return stored
            }
        }
    }

    /// The newest revocations of `tenant` (nil: every tenant's, and the keys'), lifted ones included.
    public func list(tenant: String?) async throws -> [StoredRevocation] {
        try await pool.translatingErrors { connection in
            let result = try connection.query(
                """
                SELECT \(Self.columns) FROM public.token_revocations
                WHERE $1::text IS NULL OR tenant = $1 ORDER BY created_at DESC, id LIMIT \(Self.listLimit)
                """,
                [tenant]
            )
            return try (0..<result.rowCount).map { try Self.row(result, $0) }
        }
    }

    /// Lifts revocation `id` when `tenant` may see it (nil: any) and records the lift in
    /// the audit trail, in one transaction; the lifted row, or nil when there is no such
    /// revocation for it. Lifting one already lifted changes and records nothing.
    public func lift(
        _ id: EntityID, tenant: String?, by liftedBy: String, _ context: CommandContext, claim: IdempotencyClaim?,
        answer: @escaping @Sendable (StoredRevocation) -> StoredAnswer
    ) async throws -> StoredRevocation? {
        let signer = signer
        return try await pool.translatingErrors { connection in
            try connection.transaction {
                let lifted = try connection.query(
                    """
                    UPDATE public.token_revocations SET lifted_at = now(), lifted_by = $3
                    WHERE id = $1::uuid AND ($2::text IS NULL OR tenant = $2) AND lifted_at IS NULL
                    RETURNING \(Self.columns)
                    """,
                    [id, tenant, liftedBy]
                )
                if lifted.rowCount == 1 {
                    let stored = try Self.row(lifted, 0)
                    try EventStore.append(
                        RevocationCommands.recorded(stored, .tokenRevocationLifted, context),
                        claim: claim, answer: claim.map { _ in answer(stored) }, signer: signer, on: connection)
                    return stored
                }
                if let claim { try IdempotencyKeys.refuseAnswered(claim, on: connection) }
                let current = try connection.query(
                    """
                    SELECT \(Self.columns) FROM public.token_revocations
                    WHERE id = $1::uuid AND ($2::text IS NULL OR tenant = $2)
                    """,
                    [id, tenant]
                )
                return current.rowCount == 0 ? nil : try Self.row(current, 0)
            }
        }
    }

    /// The revocations in force now, read on the pool.
    public func inForce() async throws -> [Revocation] {
        try await pool.translatingErrors { try Self.inForce(on: $0) }
    }

    /// The revocations in force, on a connection the caller holds (the listener's).
    public static func inForce(on connection: PGConnection) throws -> [Revocation] {
        let result = try connection.query(
            "SELECT \(columns) FROM public.token_revocations WHERE lifted_at IS NULL ORDER BY created_at, id"
        )
        return try (0..<result.rowCount).map { try row(result, $0).revocation }
    }

    static func row(_ result: PGResult, _ index: Int) throws -> StoredRevocation {
        let row = RowReader(result, row: index, source: "token_revocations")
        let revocation = Revocation(
            id: try row.id(Column.id), tenant: row.optionalText(Column.tenant),
            subject: row.optionalText(Column.subject), keyID: row.optionalText(Column.keyID),
            issuedBefore: try row.timestamp(Column.issuedBefore), reason: try row.text(Column.reason),
            createdAt: try row.timestamp(Column.createdAt), createdBy: try row.text(Column.createdBy)
        )
        return StoredRevocation(
            revocation: revocation, liftedAt: try row.optionalInt64(Column.liftedAt).map(Timestamp.init),
            liftedBy: row.optionalText(Column.liftedBy))
    }
}
