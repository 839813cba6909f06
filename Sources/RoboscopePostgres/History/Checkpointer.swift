import BlockingPool
import Foundation
import Logging
import Metrics
import RoboscopeProofs
import RoboscopeWire

/// Signs each tenant's tree while it grows (DESIGN.md, "Verifiable history"): every
/// `interval`, for each tenant whose log holds events no checkpoint covers, it extends
/// the stored subtrees by the new leaves and stores a checkpoint of the new root, signed
/// as a C2SP note. On its own connection and thread; a lost connection reconnects with
/// backoff, and a round is one transaction per tenant, so a crash loses nothing signed.
public final class Checkpointer: Sendable {
    private let thread: ReconnectingThread<PGConnection>

    /// Most new leaves one round adds to a tenant's tree: a large backlog (a log from
    /// before signing) is covered in steps of this, each a transaction of bounded size.
    public static let leavesPerRound = 50_000

    static let checkpoints = Counter(label: "roboscope_checkpoints_signed_total")
    static let refusals = Counter(label: "roboscope_checkpoints_refused_total")
    /// Checks and records the witness could not make (Redis unreachable): signing goes on.
    static let witnessFailures = Counter(label: "roboscope_checkpoint_witness_failures_total")

    /// `witness`: where each signed checkpoint is recorded outside Postgres, and checked
    /// before the next is signed (a database rolled back is never signed again).
    public init(
        url: String, signer: HistorySigner, deployment: String, interval: Duration,
        witness: (any CheckpointWitness)? = nil, logger: Logger
    ) {
        for counter in [Self.checkpoints, Self.refusals, Self.witnessFailures] { counter.increment(by: 0) }
        thread = ReconnectingThread(name: "checkpointer", logger: logger, lossLevel: .warning) {
            let connection = try PGConnection(url)
            // Named, so that an operator (and a test) tells its commits from the requests'.
            try connection.execute("SET application_name = 'roboscope-checkpointer'")
            return connection
        } body: { connection, stop in
            while !stop.isStopped {
                for refusal in try Self.round(
                    on: connection, signer: signer, deployment: deployment, witness: witness)
                {
                    logger.error("a tenant's tree was not signed", metadata: ["problem": "\(refusal)"])
                }
                stop.wait(interval)
            }
        }
    }

    public func start() { thread.start() }

    public func stop() async { await thread.stop() }

    /// What a round refused to sign, and why (the service never signs a history it cannot
    /// extend from the one it signed before).
    public struct Refusal: Error, CustomStringConvertible, Sendable {
        public let tenant: String
        public let description: String
    }

    /// Checkpoints every tenant whose log has grown; the refusals (tenants left as they were).
    @discardableResult
    public static func round(
        on connection: PGConnection, signer: HistorySigner, deployment: String,
        witness: (any CheckpointWitness)? = nil, leavesPerRound: Int = leavesPerRound
    ) throws -> [Refusal] {
        let due = try connection.query(
            """
            SELECT l.tenant, l.size, coalesce(c.size, 0)
            FROM eventlog.tenant_logs l
            LEFT JOIN LATERAL (
                SELECT size FROM eventlog.checkpoints c WHERE c.tenant = l.tenant ORDER BY size DESC LIMIT 1
            ) AS c ON true
            WHERE l.size <> coalesce(c.size, 0)
            ORDER BY l.tenant
            """)
        var refusals: [Refusal] = []
        for index in 0..<due.rowCount {
            let row = RowReader(due, row: index, source: "eventlog.tenant_logs")
            let tenant = try row.text(0)
            let size = try row.int64(1)
            let signed = try row.int64(2)
            guard size > signed else {
                Self.refusals.increment()
                refusals.append(
                    Refusal(
                        tenant: tenant,
                        description: "the log of \(tenant) holds \(size) events, fewer than the \(signed) it signed: "
                            + "it was rolled back or cut, and is not signed again"))
                continue
            }
            do {
                try extend(
                    tenant: tenant, through: min(size, signed + Int64(leavesPerRound)), signer: signer,
                    deployment: deployment, witness: witness, on: connection)
            } catch let refusal as Refusal {
                Self.refusals.increment()
                refusals.append(refusal)
            }
        }
        return refusals
    }

    /// Extends the tenant's tree to `size` leaves and signs it, in one transaction that
    /// only one process runs at a time for the tenant.
    static func extend(
        tenant: String, through size: Int64, signer: HistorySigner, deployment: String,
        witness: (any CheckpointWitness)?, on connection: PGConnection
    ) throws {
        let origin = Checkpoint.origin(deployment: deployment, tenant: tenant)
        let signed: WitnessedCheckpoint? = try connection.transaction {
            let locked = try connection.query(
                "SELECT pg_try_advisory_xact_lock(hashtextextended('checkpoint:' || $1, 0))", [tenant])
            guard locked.bool(0, 0) == true else { return nil }
            let old = try HistoryStore.latestCheckpoint(tenant: tenant, on: connection)
            let oldSize = old?.size ?? 0
            guard size > oldSize else { return nil }
            if let witness { try check(witness, origin: origin, tenant: tenant, on: connection) }
            let frontier = try HistoryStore.subtrees(
                tenant: tenant, Set(TreeShape.frontier(of: UInt64(oldSize))), on: connection)
            let leaves = try digests(tenant: tenant, after: oldSize, through: size, on: connection)
            let growth: TreeGrowth
            do {
                growth = try TreeGrowth(
                    from: UInt64(oldSize), frontier: frontier, appending: leaves.map(MerkleHash.leaf))
            } catch {
                throw Refusal(tenant: tenant, description: "the stored tree of \(tenant) is incomplete: \(error)")
            }
            if let old {
                // The stored subtrees must still give the root the service signed.
                let root = try SubtreeHashes { frontier[$0] ?? [] }.hash(of: 0..<UInt64(oldSize))
                guard root == old.root else {
                    throw Refusal(
                        tenant: tenant, description: "the stored tree of \(tenant) no longer gives its signed root")
                }
            }
            try store(
                growth.newNodes.filter { $0.key.level >= HistoryStore.lowestStoredLevel }, tenant: tenant,
                on: connection)
            let checkpoint = Checkpoint(origin: origin, size: growth.size, root: growth.root)
            try connection.query(
                "INSERT INTO eventlog.checkpoints (tenant, size, root, note) VALUES ($1, $2, decode($3, 'hex'), $4)",
                [tenant, Int64(growth.size), Hex.encode(growth.root), try signer.signedNote(checkpoint.text)])
            Self.checkpoints.increment()
            return WitnessedCheckpoint(size: growth.size, root: growth.root)
        }
        // Recorded once committed: the witness never holds what the database lost in a crash.
        if let witness, let signed {
            do {
                try witness.record(origin: origin, signed)
            } catch {
                Self.witnessFailures.increment()
            }
        }
    }

    /// Refuses to sign when the database no longer holds the checkpoint the witness saw.
    private static func check(
        _ witness: any CheckpointWitness, origin: String, tenant: String, on connection: PGConnection
    ) throws {
        let seen: WitnessedCheckpoint?
        do {
            seen = try witness.newest(origin: origin)
        } catch {
            Self.witnessFailures.increment()
            return
        }
        guard let seen else { return }
        if let problem = try HistoryStore.problem(tenant: tenant, witnessed: seen, on: connection) {
            throw Refusal(tenant: tenant, description: "the log of \(tenant) is not signed again: \(problem)")
        }
    }

    /// The digests of the tenant's events `after` + 1 through `size`, which must all be there.
    private static func digests(
        tenant: String, after: Int64, through size: Int64, on connection: PGConnection
    ) throws
        -> [[UInt8]]
    {
        let result = try connection.query(
            prepared: """
                SELECT tenant_seq, hash FROM eventlog.events
                WHERE tenant = $1 AND tenant_seq > $2 AND tenant_seq <= $3 ORDER BY tenant_seq
                """,
            [tenant, after, size])
        var digests: [[UInt8]] = []
        digests.reserveCapacity(result.rowCount)
        for index in 0..<result.rowCount {
            let row = RowReader(result, row: index, source: "eventlog.events")
            guard try row.int64(0) == after + Int64(index) + 1 else {
                throw Refusal(
                    tenant: tenant, description: "the log of \(tenant) lacks event \(after + Int64(index) + 1)")
            }
            digests.append(try row.bytea(1))
        }
        guard Int64(digests.count) == size - after else {
            throw Refusal(
                tenant: tenant, description: "the log of \(tenant) lacks event \(after + Int64(digests.count) + 1)")
        }
        return digests
    }

    private static func store(_ nodes: [NodeAddress: Hash], tenant: String, on connection: PGConnection) throws {
        let ordered = Array(nodes)
        // In slices, so that one statement's parameters stay a few MiB.
        var start = 0
        while start < ordered.count {
            let slice = ordered[start..<min(ordered.count, start + 20_000)]
            try connection.query(
                """
                INSERT INTO eventlog.merkle_nodes (tenant, level, index, hash)
                SELECT $1, n.level, n.index, decode(n.hash, 'hex')
                FROM unnest($2::smallint[], $3::bigint[], $4::text[]) AS n(level, index, hash)
                ON CONFLICT DO NOTHING
                """,
                [
                    tenant, "{" + slice.map { String($0.key.level) }.joined(separator: ",") + "}",
                    "{" + slice.map { String($0.key.index) }.joined(separator: ",") + "}",
                    "{" + slice.map { Hex.encode($0.value) }.joined(separator: ",") + "}",
                ])
            start += 20_000
        }
    }
}
