import Foundation
import Logging
import Testing
@testable import RoboscopeDomain
import RoboscopePostgres

/// The log itself, against a database of its own.
@Suite(.serialized) struct EventLogTests {
    let databaseURL: String

    init() async throws {
        databaseURL = try await TestDatabase.fresh("eventlog")
    }

    static let provenance = EventMetadata(Provenance(actor: "test", requestID: "t"), causationID: nil)

    static func spaceCreation(_ id: EntityID = .random(), tenant: String? = nil) -> AppendBatch {
        let now = Timestamp(microsecondsSinceEpoch: 1_795_000_000_000_000)
        let space = Space(
            id: id, tenant: tenant, key: "k-\(id)", name: "n", version: 1, createdAt: now, updatedAt: now)
        return AppendBatch(events: [
            PendingEvent(
                stream: StreamRef(.space, id), expectedVersion: .noStream, type: .spaceCreated,
                payload: .space(space), metadata: provenance
            )
        ])
    }

    static func spaceUpdate(_ id: EntityID, expected: ExpectedVersion, version: Int64) -> AppendBatch {
        let now = Timestamp(microsecondsSinceEpoch: 1_795_000_000_000_000)
        let space = Space(id: id, key: "k-\(id)", name: "v\(version)", version: version, createdAt: now, updatedAt: now)
        let stream = StreamRef(.space, id)
        return AppendBatch(
            events: [
                PendingEvent(
                    stream: stream, expectedVersion: expected, type: .spaceUpdated, payload: .space(space),
                    metadata: provenance
                )
            ], locks: [.exclusive(stream)])
    }

    /// Two creations of one stream in one batch (what a combined group must never hold)
    /// are refused, not stored as its versions 1 and 2.
    @Test func aBatchCreatingOneStreamTwiceIsRefused() throws {
        let connection = try TestDatabase.connect(databaseURL)
        let id = EntityID.random()
        var batch = Self.spaceCreation(id)
        batch.events += Self.spaceCreation(id).events
        #expect { try EventStore.append(batch, on: connection) } throws: {
            ($0 as? DomainError)?.code == .versionConflict
        }
        #expect(
            try scalar(databaseURL, "SELECT count(*) FROM eventlog.events WHERE stream_id = $1::uuid", [id.description])
                == 0)
    }

    /// Writers commit out of order (some sleep inside their transaction after taking a
    /// position); one follower reads concurrently, through the reader the gateways'
    /// tailers use (`eventlog.deliveries`), and must end with every event exactly
    /// once, each stream's versions in order.
    @Test func followerMissesNothingWhileWritersCommitOutOfOrder() async throws {
        let writers = 12
        let perWriter = 40
        let url = databaseURL
        let streams = (0..<4).map { _ in EntityID.random() }
        let setup = try TestDatabase.connect(url)
        for id in streams { _ = try EventStore.append(Self.spaceCreation(id), on: setup) }

        let expected = streams.count + writers * perWriter
        // The follower reads until it has seen as many events as were written; other
        // tests' transactions on the cluster can hold delivery back (xmin is
        // cluster-wide), so it waits as long as it must, up to a minute.
        let follower = Task.detached { () throws -> [Delivery] in
            let connection = try TestDatabase.connect(url)
            var cursor = LogCursor.start
            var seen: [Delivery] = []
            let deadline = ContinuousClock.now + .seconds(60)
            var lastProgress = ContinuousClock.now
            while seen.count < expected, ContinuousClock.now < deadline {
                let batch = try DeliveryReader.live(after: cursor, limit: 100, on: connection)
                if let last = batch.last { cursor = last.cursor }
                seen += batch
                if !batch.isEmpty { lastProgress = ContinuousClock.now }
                if batch.isEmpty, ContinuousClock.now - lastProgress > .seconds(5) {
                    lastProgress = ContinuousClock.now
                    // What holds the cluster's xmin back, for the failure message.
                    let holders = try connection.query(
                        """
                        SELECT pid, datname, state, backend_xid::text, backend_xmin::text, now() - xact_start,
                            left(query, 120)
                        FROM pg_stat_activity WHERE backend_xid IS NOT NULL OR backend_xmin IS NOT NULL
                        """)
                    let rows = (0..<holders.rowCount).map { row in
                        (0..<7).map { holders.string(row, $0) ?? "-" }.joined(separator: " | ")
                    }
                    let xmin =
                        try connection.query("SELECT pg_snapshot_xmin(pg_current_snapshot())::text").string(0, 0) ?? "?"
                    let report =
                        "follower stalled at \(seen.count) events, cursor \(cursor), xmin \(xmin):\n"
                        + rows.joined(separator: "\n")
                    Issue.record(Comment(rawValue: report))
                }
                if batch.isEmpty { try await Task.sleep(for: .milliseconds(2)) }
            }
            // Anything further would be a duplicate or an event nobody wrote.
            seen += try DeliveryReader.live(after: cursor, limit: 100, on: connection)
            return seen
        }

        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    let connection = try TestDatabase.connect(url)
                    for index in 0..<perWriter {
                        let id = streams[(writer + index) % streams.count]
                        let slow = index % 3 == 0
                        try connection.transaction {
                            if index % 2 == 0 {
                                _ = try EventStore.append(Self.spaceCreation(), on: connection)
                            } else {
                                _ = try EventStore.append(
                                    Self.spaceUpdate(id, expected: .any, version: 0), on: connection)
                            }
                            // Hold the position while later ones commit.
                            if slow { try connection.query("SELECT pg_sleep(0.003)") }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let seen = try await follower.value

        let check = try TestDatabase.connect(url)
        let total = try check.query("SELECT count(*) FROM eventlog.events").int64(0, 0)!
        #expect(Int64(seen.count) == total)
        #expect(Set(seen.map(\.cursor.position)).count == seen.count, "no event delivered twice")
        var lastVersion: [EntityID: Int64] = [:]
        for event in seen {
            #expect(
                event.change.version > lastVersion[event.change.streamID, default: 0], "stream versions arrive in order"
            )
            lastVersion[event.change.streamID] = event.change.version
        }
        #expect(total == Int64(expected))
    }

    /// A rolled-back append leaves a gap in positions; the follower passes it at once.
    @Test func abortedAppendLeavesNoHoleToWaitOn() throws {
        let connection = try TestDatabase.connect(databaseURL)
        let before = try DeliveryReader.live(after: .start, limit: 10_000, on: connection).last?.cursor ?? .start
        _ = try EventStore.append(Self.spaceCreation(), on: connection)
        try connection.execute("BEGIN")
        _ = try EventStore.append(Self.spaceCreation(), on: connection)
        try connection.execute("ROLLBACK")
        _ = try EventStore.append(Self.spaceCreation(), on: connection)
        let after = try Self.read(2, after: before, on: connection)
        try #require(after.count == 2)
        #expect(after[1].cursor.position - after[0].cursor.position == 2, "the aborted position is a gap")
    }

    /// An open transaction holds back events committed after it began writing,
    /// and they are delivered once it ends. (The later one is another tenant's: one
    /// tenant's appends commit one after another, in the order of its log.)
    @Test func openTransactionHoldsBackLaterCommits() throws {
        let reader = try TestDatabase.connect(databaseURL)
        let slow = try TestDatabase.connect(databaseURL)
        let fast = try TestDatabase.connect(databaseURL)
        let start = try DeliveryReader.live(after: .start, limit: 100_000, on: reader).last?.cursor ?? .start
        try slow.execute("BEGIN")
        _ = try EventStore.append(Self.spaceCreation(), on: slow)
        _ = try EventStore.append(Self.spaceCreation(tenant: "elsewhere"), on: fast)
        // The hazard: the later position is already visible while the earlier one is not,
        // so a reader that trusted positions alone would move past the slow event.
        let visible = try reader.query("SELECT max(position) FROM eventlog.events").int64(0, 0)!
        let slowPosition = try slow.query(
            "SELECT max(position) FROM eventlog.events WHERE transaction_id = pg_current_xact_id()"
        ).int64(0, 0)!
        #expect(slowPosition < visible)
        #expect(try DeliveryReader.live(after: start, limit: 100, on: reader).isEmpty)
        try slow.execute("COMMIT")
        let delivered = try Self.read(2, after: start, on: reader)
        try #require(delivered.count == 2)
        #expect(
            delivered[0].cursor.position == slowPosition,
            "the slow event comes first: its transaction began writing first")
    }

    /// A transaction that writes in another database of the cluster cannot add events to
    /// this log, so it holds nothing back: the cluster's oldest running transaction (the
    /// snapshot's xmin) counted every database's, and one long write elsewhere (a batch
    /// job, a migration, another test's bulk insert) stalled every gateway for as long
    /// as it ran.
    @Test func aTransactionInAnotherDatabaseHoldsNothingBack() async throws {
        let (here, elsewhereURL) = (databaseURL, try await TestDatabase.fresh("eventlog_elsewhere"))
        try await onOwnThread {
            let reader = try TestDatabase.connect(here)
            let elsewhere = try TestDatabase.connect(elsewhereURL)
            let start = try DeliveryReader.live(after: .start, limit: 100_000, on: reader).last?.cursor ?? .start
            try elsewhere.execute("BEGIN")
            _ = try elsewhere.query("SELECT pg_current_xact_id()")  // takes a transaction id, as a write does
            defer { try? elsewhere.execute("ROLLBACK") }
            _ = try EventStore.append(Self.spaceCreation(), on: reader)
            #expect(try DeliveryReader.live(after: start, limit: 100, on: reader).count == 1)
            #expect(try DeliveryReader.head(on: reader).position > start.position)
        }
    }

    /// Reads until `count` events arrived (or five seconds passed): delivery can lag a
    /// moment behind the commit while another transaction of this database runs.
    static func read(_ count: Int, after cursor: LogCursor, on connection: PGConnection) throws -> [Delivery] {
        var delivered: [Delivery] = []
        for _ in 0..<500 where delivered.count < count {
            delivered = try DeliveryReader.live(after: cursor, limit: 100, on: connection)
            if delivered.count < count { usleep(10_000) }
        }
        return delivered
    }

    @Test func concurrentAppendsAtOneVersionExactlyOneWins() async throws {
        let url = databaseURL
        let id = EntityID.random()
        _ = try EventStore.append(Self.spaceCreation(id), on: TestDatabase.connect(url))
        let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    do {
                        _ = try EventStore.append(
                            Self.spaceUpdate(id, expected: .exactly(1), version: 2), on: TestDatabase.connect(url))
                        return true
                    } catch let error as DomainError where error.code == .versionConflict {
                        return false
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 1)
        let versions = try TestDatabase.connect(url).query(
            "SELECT stream_version FROM eventlog.events WHERE stream_id = $1 ORDER BY 1", [id.description]
        )
        #expect(versions.rowCount == 2)
    }

    @Test func secondCreatorOfAStreamIsRefused() throws {
        let connection = try TestDatabase.connect(databaseURL)
        let id = EntityID.random()
        _ = try EventStore.append(Self.spaceCreation(id), on: connection)
        #expect(throws: DomainError.self) { try EventStore.append(Self.spaceCreation(id), on: connection) }
    }

    @Test func logRefusesUpdatesAndDeletes() throws {
        let connection = try TestDatabase.connect(databaseURL)
        _ = try EventStore.append(Self.spaceCreation(), on: connection)
        for statement in [
            "UPDATE eventlog.events SET type = 'x'", "DELETE FROM eventlog.events", "TRUNCATE eventlog.events",
        ] {
            #expect(throws: PGError.self) { try connection.query(statement) }
        }
    }
}
