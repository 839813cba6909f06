import Foundation
import Logging
import Testing
@testable import RoboscopeDomain
@testable import RoboscopePostgres

/// Group commit (`AppendCombiner`): the requests that queue behind a running append are
/// committed together, each with its own outcome. One append runs at a time here, and
/// the first waits on an advisory lock the test holds, so the others queue behind it.
@Suite struct AppendCombinerTests {
    let url: String
    let pool: PostgresPool
    let store: EventStore
    let blocker: PGConnection

    init() async throws {
        url = try await TestDatabase.fresh("combiner")
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        pool = PostgresPool(url: url, size: Self.poolSize, logger: logger)
        store = EventStore(pool: pool, appendsAtOnce: 1)
        blocker = try TestDatabase.connect(url)
    }

    static let poolSize = 4

    static func creation(_ id: EntityID = .random(), locked: Bool = false) -> AppendBatch {
        var batch = EventLogTests.spaceCreation(id)
        if locked { batch.locks = [.exclusive(StreamRef(.space, id))] }
        return batch
    }

    /// Starts an append that waits for the test's lock on its stream, then appends
    /// `batches` behind it, and lets the first go once every one of them is queued.
    func appendBehindABlockedOne(
        _ batches: [(AppendBatch, IdempotencyClaim?)]
    ) async throws -> [Result<[EventStore.Appended], any Error>] {
        let store = store
        return try await behindABlockedAppend(
            batches.map { batch, claim in
                {
                    await Result {
                        try await store.append(
                            batch, claim: claim,
                            answer: claim.map { _ in StoredAnswer(status: 201, body: Array("{}".utf8)) })
                    }
                }
            })
    }

    /// Runs `writes` while the one runner appends a batch that waits for the test's lock,
    /// and lets that batch go once every write is queued behind it.
    func behindABlockedAppend<T: Sendable>(_ writes: [@Sendable () async -> T]) async throws -> [T] {
        try await connectEveryPoolThread()
        let first = EntityID.random()
        let lock = StreamLock.exclusive(StreamRef(.space, first)).name
        try blocker.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [lock])
        let store = store
        let head = Task { try await store.append(Self.creation(first, locked: true)) }
        let url = url
        try await eventually("the first append waits for the lock") {
            try scalar(
                url,
                """
                SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = \
                'Lock' AND wait_event = 'advisory'
                """
            ) == 1
        }
        // One at a time, each queued before the next starts: tasks started together join
        // the queue in whatever order they get a thread (a busy CI run queued the third
        // before the first), and some tests here depend on the order.
        var queued: [Task<T, Never>] = []
        for write in writes {
            queued.append(Task { await write() })
            let count = queued.count
            try await eventually("request \(count) is queued") { store.combiner.queued == count }
        }
        try blocker.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [lock])
        _ = try await head.value
        var outcomes: [T] = []
        for task in queued { outcomes.append(await task.value) }
        return outcomes
    }

    /// Has every thread of the pool make its connection before the test times anything: a
    /// clean-clone run, with every suite making databases, took over 30 s to connect the
    /// threads that the writes which read first need.
    func connectEveryPoolThread() async throws {
        let gate = "connect every pool thread"
        try blocker.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [gate])
        let pool = pool
        let jobs = (0..<Self.poolSize).map { _ in
            Task {
                try await pool.withConnection {
                    _ = try $0.query("SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))", [gate])
                }
            }
        }
        let url = url
        try await eventually("every pool thread is connected", within: 120) {
            try scalar(
                url,
                """
                SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = \
                'Lock' AND wait_event = 'advisory'
                """
            ) == Self.poolSize
        }
        try blocker.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [gate])
        for job in jobs { try await job.value }
    }

    func transactions(of ids: [EntityID]) throws -> Int64 {
        try scalar(
            url, "SELECT count(DISTINCT transaction_id) FROM eventlog.events WHERE stream_id = ANY($1::uuid[])",
            ["{" + ids.map(\.description).joined(separator: ",") + "}"])
    }

    @Test func queuedRequestsCommitInOneTransactionEachWithItsOwnEvents() async throws {
        let ids = (0..<6).map { _ in EntityID.random() }
        let outcomes = try await appendBehindABlockedOne(ids.map { (Self.creation($0), nil) })
        #expect(try transactions(of: ids) == 1)
        for (id, outcome) in zip(ids, outcomes) {
            let appended = try outcome.get()
            #expect(appended.count == 1)
            #expect(appended.first?.version == 1)
            let stream = try scalarText(
                url, "SELECT stream_id::text FROM eventlog.events WHERE position = $1", [String(appended[0].position)])
            #expect(stream == id.description, "each request is told its own event's position")
        }
        #expect(
            try scalar(
                url, "SELECT count(*) FROM spaces WHERE id = ANY($1::uuid[])",
                ["{" + ids.map(\.description).joined(separator: ",") + "}"]) == 6)
    }

    @Test func aRefusalInTheGroupFailsOnlyItsOwnRequest() async throws {
        let ids = (0..<3).map { _ in EntityID.random() }
        let missing = EntityID.random()
        var refused = EventLogTests.spaceUpdate(missing, expected: .exactly(3), version: 4)
        refused.requiredStreams = [StreamRef(.space, missing)]
        let outcomes = try await appendBehindABlockedOne(
            [(Self.creation(ids[0]), nil), (refused, nil), (Self.creation(ids[1]), nil), (Self.creation(ids[2]), nil)]
        )
        #expect((outcomes[1].failure as? DomainError)?.code == .notFound)
        for index in [0, 2, 3] { #expect((try? outcomes[index].get())?.count == 1, "request \(index)") }
        #expect(
            try scalar(
                url, "SELECT count(*) FROM eventlog.events WHERE stream_id = ANY($1::uuid[])",
                ["{" + ids.map(\.description).joined(separator: ",") + "}"]) == 3)
        #expect(
            try scalar(url, "SELECT count(*) FROM eventlog.events WHERE stream_id = $1::uuid", [missing.description])
                == 0)
    }

    /// Each request's enforced-lock check is made in the combined batch.
    @Test func eachRequestsLockCheckIsMadeInTheGroup() async throws {
        let locked = EntityID.random()
        try blocker.execute(
            """
            INSERT INTO session_locks (work_session_id, holder, token_sha256, fencing_token, enforce, expires_at)
            VALUES ('\(locked)', 'ana', 'cafe', 1, true, now() + interval '1 hour')
            """)
        let fencedID = EntityID.random()
        var fenced = Self.creation(fencedID)
        fenced.lockCheck = LockCheck(workSessionID: locked, tokenSHA256: "beef")
        let admittedID = EntityID.random()
        var admitted = Self.creation(admittedID)
        admitted.lockCheck = LockCheck(workSessionID: locked, tokenSHA256: "cafe")
        let outcomes = try await appendBehindABlockedOne([(admitted, nil), (fenced, nil), (Self.creation(), nil)])
        #expect((try? outcomes[0].get())?.count == 1)
        #expect((outcomes[1].failure as? DomainError)?.code == .locked)
        #expect((try? outcomes[2].get())?.count == 1)
        #expect(
            try scalar(url, "SELECT count(*) FROM eventlog.events WHERE stream_id = $1::uuid", [fencedID.description])
                == 0)
        #expect(
            try scalar(url, "SELECT count(*) FROM eventlog.events WHERE stream_id = $1::uuid", [admittedID.description])
                == 1)
    }

    @Test func keysInOneGroupAreEachStoredAndOneKeyIsNeverTwiceInAGroup() async throws {
        let claims = (0..<3).map { IdempotencyClaim(actor: "ana", key: "k-\($0)-\(UUID())", fingerprint: "f") }
        let ids = (0..<4).map { _ in EntityID.random() }
        let outcomes = try await appendBehindABlockedOne([
            (Self.creation(ids[0]), claims[0]), (Self.creation(ids[1]), claims[1]),
            (Self.creation(ids[2]), claims[0]), (Self.creation(ids[3]), claims[2]),
        ])
        #expect((try? outcomes[0].get()) != nil)
        #expect((try? outcomes[1].get()) != nil)
        #expect((try? outcomes[3].get()) != nil)
        #expect(
            (outcomes[2].failure as? DomainError)?.code == .idempotencyKeyAnswered,
            "the second use of a key sees the first's answer")
        #expect(try transactions(of: [ids[0], ids[1], ids[3]]) == 1)
        #expect(
            try scalar(url, "SELECT count(*) FROM eventlog.events WHERE stream_id = $1::uuid", [ids[2].description])
                == 0)
        for claim in claims {
            #expect(
                try scalar(
                    url, "SELECT count(*) FROM idempotency_keys WHERE actor = 'ana' AND key = $1 AND status = 201",
                    [claim.key]) == 1)
        }
    }

    @Test func twoCreatesOfOneIdNeverShareAGroup() async throws {
        let id = EntityID.random()
        let other = EntityID.random()
        let outcomes = try await appendBehindABlockedOne([
            (Self.creation(id), nil), (Self.creation(other), nil), (Self.creation(id), nil),
        ])
        #expect((try? outcomes[0].get())?.first?.version == 1)
        #expect((try? outcomes[1].get()) != nil)
        #expect((outcomes[2].failure as? DomainError)?.code == .alreadyExists, "not a second creation at version 2")
        #expect(
            try scalar(url, "SELECT count(*) FROM eventlog.events WHERE stream_id = $1::uuid", [id.description]) == 1)
        #expect(try transactions(of: [id, other]) == 1)
    }

    /// Requests whose locks would have ordered them never share a transaction: a shared
    /// and an exclusive lock on one name, or two exclusive ones.
    @Test func requestsWhoseLocksConflictNeverShareAGroup() async throws {
        let name = StreamRef(.workSessionLock, EntityID.random())
        func creation(_ lock: StreamLock) -> (EntityID, AppendBatch) {
            let id = EntityID.random()
            var batch = Self.creation(id)
            batch.locks = [lock]
            return (id, batch)
        }
        let (readerA, a) = creation(.shared(name))
        let (readerB, b) = creation(.shared(name))
        let (writer, c) = creation(.exclusive(name))
        let (writer2, d) = creation(.exclusive(name))
        let outcomes = try await appendBehindABlockedOne([(a, nil), (b, nil), (c, nil), (d, nil)])
        for outcome in outcomes { #expect((try? outcome.get())?.count == 1) }
        #expect(try transactions(of: [readerA, readerB]) == 1, "shared with shared: one group")
        #expect(try transactions(of: [readerA, writer]) == 2)
        #expect(try transactions(of: [writer, writer2]) == 2)
    }

    /// A write that reads first (an update) finds every runner busy: it reads and decides
    /// on its own, and its append joins the queue. A decision made on a state that a
    /// write ahead of it in the queue changes is refused by the append's version check.
    @Test func writesThatReadFirstQueueTheirDecisionsWhenEveryRunnerIsBusy() async throws {
        let setup = try TestDatabase.connect(url)
        let spaces = (0..<2).map { _ in EntityID.random() }
        for id in spaces { _ = try EventStore.append(Self.creation(id), on: setup) }
        let store = store
        func update(_ id: EntityID) -> @Sendable () async -> Result<StoredAnswer, any Error> {
            {
                await Result {
                    try await store.append(
                        after: { connection in
                            try RowReader(
                                try connection.query(
                                    "SELECT version FROM spaces WHERE id = $1::uuid", [id.description]),
                                row: 0, source: "spaces"
                            ).int64(0)
                        },
                        { version in
                            (
                                StoredAnswer(status: 200, body: []),
                                EventLogTests.spaceUpdate(id, expected: .exactly(version), version: version + 1)
                            )
                        }, claim: nil)
                }
            }
        }
        let outcomes = try await behindABlockedAppend([update(spaces[0]), update(spaces[1]), update(spaces[0])])
        #expect((try? outcomes[1].get()) != nil)
        // The two updates of one space queue in the order their reads end.
        let sameSpace = [outcomes[0], outcomes[2]]
        #expect(sameSpace.filter { (try? $0.get()) != nil }.count == 1)
        #expect(
            sameSpace.filter { ($0.failure as? DomainError)?.code == .versionConflict }.count == 1,
            "one decided on version 1 and was appended after version 2")
        #expect(
            try scalar(
                url,
                """
                SELECT count(DISTINCT transaction_id) FROM eventlog.events
                WHERE stream_id = ANY($1::uuid[]) AND stream_version = 2
                """, ["{" + spaces.map(\.description).joined(separator: ",") + "}"]) == 1)
        #expect(try scalar(url, "SELECT max(version) FROM spaces WHERE id = $1::uuid", [spaces[0].description]) == 2)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
