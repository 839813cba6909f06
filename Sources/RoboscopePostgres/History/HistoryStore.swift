import Foundation
import RoboscopeDomain
import RoboscopeProofs

/// A tenant's verifiable history as stored (schema/migrations/0016): its signed
/// checkpoints, the proofs made from its stored subtrees, and its log's entries with
/// what a verifier needs to check each one without trusting the database.
public struct HistoryStore: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public struct StoredCheckpoint: Sendable, Hashable {
        public var size: Int64
        public var root: Hash
        /// The signed note, as served.
        public var note: String
    }

    /// One event of a tenant's log, as a verifier checks it.
    public struct Entry: Sendable, Hashable {
        public var tenantSeq: Int64
        public var position: Int64
        public var digest: Hash
        /// The digest of the previous event of its stream (nil for a stream's first).
        public var previousDigest: Hash?
        /// The text the digest covers after the previous digest (schema/functions/event_digest.sql):
        /// event id, stream type, stream id, version, type, data, metadata and the time in
        /// epoch microseconds, separated by U+001F, as the database holds them now.
        public var content: String
        /// The signature of the append transaction that wrote it, and its range.
        public var signedRange: ClosedRange<Int64>?
        public var signature: [UInt8]?
    }

    /// Every tenant with a log.
    public func tenants() async throws -> [String] {
        try await pool.translatingErrors { connection in
            let result = try connection.query("SELECT tenant FROM eventlog.tenant_logs ORDER BY tenant")
            return (0..<result.rowCount).compactMap { result.string($0, 0) }
        }
    }

    /// Why the tenant's stored tree does not hold `witnessed` (a checkpoint signed before),
    /// nil when it does.
    public func problem(tenant: String, witnessed: WitnessedCheckpoint) async throws -> String? {
        try await pool.translatingErrors { try Self.problem(tenant: tenant, witnessed: witnessed, on: $0) }
    }

    static func problem(tenant: String, witnessed: WitnessedCheckpoint, on connection: PGConnection) throws -> String? {
        let newest = try latestCheckpoint(tenant: tenant, on: connection).map {
            WitnessedCheckpoint(size: UInt64($0.size), root: $0.root)
        }
        let stored = try subtrees(tenant: tenant, witnessed.addresses, on: connection)
        return witnessed.problem(databaseNewest: newest, subtrees: SubtreeHashes { stored[$0] ?? [] })
    }

    public func latestCheckpoint(tenant: String) async throws -> StoredCheckpoint? {
        try await pool.translatingErrors { try Self.latestCheckpoint(tenant: tenant, on: $0) }
    }

    static func latestCheckpoint(tenant: String, on connection: PGConnection) throws -> StoredCheckpoint? {
        let result = try connection.query(
            prepared: """
                SELECT size, root, note FROM eventlog.checkpoints WHERE tenant = $1 ORDER BY size DESC LIMIT 1
                """,
            [tenant])
        guard result.rowCount == 1 else { return nil }
        let row = RowReader(result, row: 0, source: "eventlog.checkpoints")
        return StoredCheckpoint(size: try row.int64(0), root: try row.bytea(1), note: try row.text(2))
    }

    /// The inclusion proof of event `tenantSeq` (1-based) in the tenant's tree of `treeSize`
    /// leaves, which a checkpoint must cover.
    public func inclusionProof(tenant: String, tenantSeq: Int64, treeSize: Int64) async throws -> [Hash] {
        try await pool.translatingErrors { connection in
            try Self.requireCheckpoint(tenant: tenant, covering: treeSize, field: "tree_size", on: connection)
            guard tenantSeq >= 1, tenantSeq <= treeSize else {
                throw DomainError(
                    .malformedRequest, "query tenant_seq: must be 1 to tree_size (\(treeSize))", field: "tenant_seq")
            }
            return try Self.proof(tenant: tenant, on: connection) { subtrees in
                try MerkleProofs.inclusion(index: UInt64(tenantSeq - 1), size: UInt64(treeSize), from: subtrees)
            }
        }
    }

    /// The consistency proof between the tenant's trees of `from` and `to` leaves.
    public func consistencyProof(tenant: String, from: Int64, to: Int64) async throws -> [Hash] {
        try await pool.translatingErrors { connection in
            guard from >= 1, from <= to else {
                throw DomainError(.malformedRequest, "query from: must be 1 to `to` (\(to))", field: "from")
            }
            try Self.requireCheckpoint(tenant: tenant, covering: to, field: "to", on: connection)
            return try Self.proof(tenant: tenant, on: connection) { subtrees in
                try MerkleProofs.consistency(old: UInt64(from), new: UInt64(to), from: subtrees)
            }
        }
    }

    /// Up to `limit` entries of the tenant's log after `tenantSeq`, in order.
    public func entries(tenant: String, after tenantSeq: Int64, limit: Int) async throws -> [Entry] {
        try await pool.translatingErrors { try Self.entries(tenant: tenant, after: tenantSeq, limit: limit, on: $0) }
    }

    /// What `entries` selects of an event, the previous event of its stream and the
    /// signature that covers it.
    enum EntryColumn: Int, SelectedColumn {
        case tenantSeq, position, digest, previousDigest, content, firstSeq, lastSeq, signature

        var sql: String {
            switch self {
            case .tenantSeq: "e.tenant_seq"
            case .position: "e.position"
            case .digest: "e.hash"
            case .previousDigest:
                """
                (SELECT p.hash FROM eventlog.events p
                 WHERE p.stream_type = e.stream_type AND p.stream_id = e.stream_id
                   AND p.stream_version = e.stream_version - 1)
                """
            // As eventlog.event_digest writes it: the two must not differ.
            case .content:
                """
                concat_ws(E'\\x1f', e.event_id::text, e.stream_type, e.stream_id::text, e.stream_version::text,
                          e.type, e.data::text, e.metadata::text,
                          (extract(epoch FROM e.recorded_at) * 1000000)::bigint::text)
                """
            case .firstSeq: "s.first_seq"
            case .lastSeq: "s.last_seq"
            case .signature: "s.signature"
            }
        }
    }

    static func entries(
        tenant: String, after tenantSeq: Int64, limit: Int, on connection: PGConnection
    ) throws
        -> [Entry]
    {
        let result = try connection.query(
            prepared: """
                SELECT \(EntryColumn.selectList)
                FROM eventlog.events e
                LEFT JOIN LATERAL (
                    SELECT * FROM eventlog.append_signatures s
                    WHERE s.tenant = e.tenant AND s.first_seq <= e.tenant_seq
                    ORDER BY s.first_seq DESC LIMIT 1
                ) AS s ON s.last_seq >= e.tenant_seq
                WHERE e.tenant = $1 AND e.tenant_seq > $2
                ORDER BY e.tenant_seq
                LIMIT $3
                """,
            [tenant, tenantSeq, limit])
        return try (0..<result.rowCount).map { index in
            var row = RowReader(result, row: index, source: "eventlog.events")
            let position = try row.int64(EntryColumn.position)
            row.key = "\(position)"
            let signedRange = try row.optionalInt64(EntryColumn.firstSeq).map { first in
                first...(try row.int64(EntryColumn.lastSeq))
            }
            return Entry(
                tenantSeq: try row.int64(EntryColumn.tenantSeq), position: position,
                digest: try row.bytea(EntryColumn.digest),
                previousDigest: row.isNull(EntryColumn.previousDigest)
                    ? nil : try row.bytea(EntryColumn.previousDigest),
                content: try row.text(EntryColumn.content), signedRange: signedRange,
                signature: row.isNull(EntryColumn.signature) ? nil : try row.bytea(EntryColumn.signature))
        }
    }

    private static func requireCheckpoint(
        tenant: String, covering size: Int64, field: String, on connection: PGConnection
    ) throws {
        let newest = try latestCheckpoint(tenant: tenant, on: connection)?.size ?? 0
        guard size >= 1, size <= newest else {
            throw DomainError(
                .malformedRequest, "query \(field): must be 1 to the newest checkpoint's size (\(newest))",
                field: field)
        }
    }

    /// Runs `make` over the tenant's stored subtrees, fetched in one query: the subtrees a
    /// proof reads depend on the tree's shape only (`SubtreeHashes.addresses(readBy:)`).
    private static func proof(
        tenant: String, on connection: PGConnection, _ make: (SubtreeHashes) throws -> [Hash]
    ) throws -> [Hash] {
        let addresses = try SubtreeHashes.addresses { _ = try make($0) }
        let stored = try subtrees(tenant: tenant, addresses, on: connection)
        return try make(
            SubtreeHashes { address in
                guard let hash = stored[address] else {
                    throw StoredTreeIncomplete(tenant: tenant, address: address)
                }
                return hash
            })
    }

    /// The lowest level of the subtrees kept in eventlog.merkle_nodes: a smaller one (up to
    /// 15 leaves) is hashed from its events' digests when a proof reads it. The table then
    /// holds about an eighth as many rows as the log has events, instead of twice as many:
    /// the checkpointer's inserts cost the write path 7% in the benchmark when it kept all.
    public static let lowestStoredLevel = 4

    /// The tenant's subtrees at `addresses`: the stored ones read, the smaller ones hashed
    /// from their leaves. A subtree the database cannot give is absent.
    static func subtrees(
        tenant: String, _ addresses: Set<NodeAddress>, on connection: PGConnection
    ) throws
        -> [NodeAddress: Hash]
    {
        var hashes = try storedSubtrees(
            tenant: tenant, addresses.filter { $0.level >= lowestStoredLevel }, on: connection)
        let small = addresses.filter { $0.level < lowestStoredLevel }
        guard !small.isEmpty else { return hashes }
        let leaves = try leafHashes(tenant: tenant, Set(small.flatMap(\.leaves)), on: connection)
        for address in small {
            let hashesOfLeaves = address.leaves.compactMap { leaves[$0] }
            guard hashesOfLeaves.count == address.leaves.count else { continue }
            hashes[address] = MerkleHash.root(hashesOfLeaves[...])
        }
        return hashes
    }

    /// The leaf hashes of the tenant's events at 0-based `indexes` (tenant_seq - 1).
    private static func leafHashes(
        tenant: String, _ indexes: Set<UInt64>, on connection: PGConnection
    ) throws
        -> [UInt64: Hash]
    {
        let result = try connection.query(
            prepared:
                "SELECT tenant_seq, hash FROM eventlog.events WHERE tenant = $1 AND tenant_seq = ANY($2::bigint[])",
            [tenant, "{" + indexes.map { String($0 + 1) }.joined(separator: ",") + "}"])
        var leaves: [UInt64: Hash] = [:]
        for index in 0..<result.rowCount {
            let row = RowReader(result, row: index, source: "eventlog.events")
            leaves[UInt64(try row.int64(0) - 1)] = MerkleHash.leaf(try row.bytea(1))
        }
        return leaves
    }

    private static func storedSubtrees(
        tenant: String, _ addresses: Set<NodeAddress>, on connection: PGConnection
    )
        throws -> [NodeAddress: Hash]
    {
        guard !addresses.isEmpty else { return [:] }
        let ordered = Array(addresses)
        let result = try connection.query(
            prepared: """
                SELECT n.level, n.index, n.hash
                FROM unnest($2::smallint[], $3::bigint[]) AS a(level, index)
                JOIN eventlog.merkle_nodes n ON n.tenant = $1 AND n.level = a.level AND n.index = a.index
                """,
            [
                tenant, "{" + ordered.map { String($0.level) }.joined(separator: ",") + "}",
                "{" + ordered.map { String($0.index) }.joined(separator: ",") + "}",
            ])
        var hashes: [NodeAddress: Hash] = [:]
        for index in 0..<result.rowCount {
            let row = RowReader(result, row: index, source: "eventlog.merkle_nodes")
            hashes[NodeAddress(level: Int(try row.int64(0)), index: UInt64(try row.int64(1)))] = try row.bytea(2)
        }
        return hashes
    }
}

/// A subtree a checkpoint covers is missing from eventlog.merkle_nodes: the store was
/// changed behind the service's back (a proof cannot be made; verifiers would see it).
struct StoredTreeIncomplete: Error, CustomStringConvertible {
    let tenant: String
    let address: NodeAddress

    var description: String {
        "the stored tree of \(tenant) lacks the subtree at level \(address.level), index \(address.index)"
    }
}
