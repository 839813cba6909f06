import BlockingPool
import RoboscopeDomain

/// A keyed write on its way to the log: whose key it is and what the request was.
/// `eventlog.append` admits one request per key at a time and one change per key ever.
public struct IdempotencyClaim: Hashable, Sendable {
    public var actor: String
    public var key: String
    /// SHA-256 (hex) of the method, the path and the body: the same key with another
    /// request is refused.
    public var fingerprint: String

    public init(actor: String, key: String, fingerprint: String) {
        self.actor = actor
        self.key = key
        self.fingerprint = fingerprint
    }
}

/// The answer a keyed write gave, stored with its events and given again to a retry.
public struct StoredAnswer: Hashable, Sendable {
    public var status: Int
    /// JSON, or empty (204).
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// A key's record: the request it was first used for and the answer.
public struct IdempotencyRecord: Hashable, Sendable {
    public var fingerprint: String
    public var answer: StoredAnswer
}

/// The stored answers of keyed writes (`public.idempotency_keys`, migration 0012).
public struct IdempotencyKeys: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// The key's record, to be replayed as an acknowledgement: once it is found, a
    /// transaction of its own that writes to the WAL (a transactional logical message,
    /// which any role may emit; taking a transaction id alone writes nothing, and a commit
    /// that wrote nothing does not wait) commits, and its commit waits for the synchronous
    /// standby like any write's, so the standby then has everything committed before it,
    /// the stored answer included. A first attempt whose wait was cancelled
    /// (`commit_unknown`) stored the answer here alone; its retry must not acknowledge it
    /// before the standby has it. Replays are rare: the barrier costs one commit each.
    public func replayableRecord(actor: String, key: String) async throws -> IdempotencyRecord? {
        try await pool.translatingErrors { connection in
            guard let record = try Self.record(actor: actor, key: key, on: connection) else { return nil }
            try connection.query(prepared: "SELECT pg_logical_emit_message(true, 'roboscope.replay', '')")
            return record
        }
    }

    /// The key's record, read on a connection the caller holds.
    static func record(actor: String, key: String, on connection: PGConnection) throws -> IdempotencyRecord? {
        let result = try connection.query(
            prepared: "SELECT fingerprint, status, body FROM idempotency_keys WHERE actor = $1 AND key = $2",
            [actor, key]
        )
        guard result.rowCount == 1 else { return nil }
        let row = RowReader(result, row: 0, source: "idempotency_keys")
        return IdempotencyRecord(
            fingerprint: try row.text(0),
            answer: StoredAnswer(status: Int(try row.int64(1)), body: try row.bytes(2))
        )
    }

    /// Refuses a claim whose key has been answered (see below), in a pool job.
    public func refuseAnswered(_ claim: IdempotencyClaim) async throws {
        try await pool.translatingErrors { try Self.refuseAnswered(claim, on: $0) }
    }

    /// Refuses a claim whose key has been answered (`idempotencyKeyAnswered`: the caller
    /// gives the stored answer instead), for a write that would otherwise answer without
    /// an append to check the key.
    static func refuseAnswered(_ claim: IdempotencyClaim, on connection: PGConnection) throws {
        if try record(actor: claim.actor, key: claim.key, on: connection) != nil { throw answered }
    }

    /// What a keyed write that comes after its key's answer is refused with.
    public static let answered = DomainError(
        .idempotencyKeyAnswered, "a request with this Idempotency-Key has been answered", field: "Idempotency-Key"
    )

    /// Stores an answer in the caller's transaction (for writes whose answer depends on
    /// what the append returned).
    static func store(_ claim: IdempotencyClaim, _ answer: StoredAnswer, on connection: PGConnection) throws {
        try connection.query(
            "INSERT INTO idempotency_keys (actor, key, fingerprint, status, body) VALUES ($1, $2, $3, $4::integer, $5)",
            [claim.actor, claim.key, claim.fingerprint, answer.status, String(decoding: answer.body, as: UTF8.self)]
        )
    }

    /// Removes the keys stored more than `retention` ago; returns how many.
    @discardableResult
    public func purge(olderThan retention: Duration) async throws -> Int {
        let seconds = retention.secondsDouble
        return try await pool.translatingErrors { connection in
            let result = try connection.query(
                """
                WITH gone AS (
                    DELETE FROM idempotency_keys
                    WHERE created_at < clock_timestamp() - make_interval(secs => $1::float8)
                    RETURNING 1)
                SELECT count(*) FROM gone
                """,
                [seconds]
            )
            return Int(try RowReader(result, row: 0, source: "idempotency_keys").int64(0))
        }
    }
}
