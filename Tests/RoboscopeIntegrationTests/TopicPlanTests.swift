import Testing
import RoboscopeDomain
@testable import RoboscopePostgres

/// A page of a topic, and its head, come from the topic's own index whatever the
/// statistics say and wherever the topic's events lie in the log. Without the plan
/// settings, Postgres chose a bitmap scan of the topic's whole rest and a sort (a
/// catch-up of n events cost n²); asked for whole rows, it walked the log's position
/// index through every other topic's events when it took the topic for a large share
/// of the log (a quiet session's page or head cost a walk to the end of the log).
/// Each test's blocking database work runs on a thread of its own, off the cooperative pool.
@Suite struct TopicPlanTests {
    static let space = EntityID("00000000-0000-4000-8000-000000000001")!
    static let session = EntityID("00000000-0000-4000-8000-000000000002")!
    static let busySession = EntityID("00000000-0000-4000-8000-000000000003")!

    /// `count` events of `session` (and its space's topic when `onSpaceTopic`), numbered from `first`.
    static func insert(
        _ count: Int, session: EntityID, first: Int = 1, onSpaceTopic: Bool, on connection: PGConnection
    ) throws {
        try connection.execute(
            """
            ALTER TABLE eventlog.events DISABLE TRIGGER USER;
            INSERT INTO eventlog.events (event_id, stream_type, stream_id, stream_version, type, data, metadata,
                                         space_id, work_session_id, hash, work_session_seq, space_seq)
            SELECT gen_random_uuid(), 'marker', gen_random_uuid(), 1, 'marker.created', '{}', '{"actor": "test"}',
                   '\(space)', '\(session)', sha256(g::text::bytea), g, \(onSpaceTopic ? "g" : "NULL")
            FROM generate_series(\(first), \(first + count - 1)) g;
            ALTER TABLE eventlog.events ENABLE TRIGGER USER;
            """)
    }

    /// The cursor of the event at `position` (a follower that has read up to it).
    static func cursor(at position: Int64, on connection: PGConnection) throws -> LogCursor {
        let result = try connection.query(
            "SELECT transaction_id::text FROM eventlog.events WHERE position = $1", [position])
        return LogCursor(transactionID: UInt64(result.string(0, 0)!)!, position: position)
    }

    /// The plan of `sql` as the service runs it: with `settings` (the topic reads'), prepared
    /// and executed under them, as `DeliveryReader` runs it (a generic plan: `$1` stays a
    /// parameter in it); without, planned for these parameters.
    static func plan(
        _ sql: String, _ parameters: PostgresBinds, settings: String? = nil, on connection: PGConnection
    ) throws -> String {
        let plan: PGResult
        if let settings {
            let name = try #require(try connection.preparedName(sql, parameterCount: parameters.count))
            let arguments = parameters.map {
                $0.map { "'" + $0.postgresText.replacingOccurrences(of: "'", with: "''") + "'" } ?? "NULL"
            }
            plan = try connection.transaction(settings) {
                try connection.query("EXPLAIN EXECUTE \(name)(\(arguments.joined(separator: ", ")))")
            }
        } else {
            plan = try connection.query("EXPLAIN " + sql, parameters)
        }
        let text = (0..<plan.rowCount).compactMap { plan.string($0, 0) }.joined(separator: "\n")
        if settings != nil { #expect(text.contains("$1"), "not the generic plan the service runs: \(text)") }
        return text
    }

    /// A prepared statement's generic plan, as Postgres takes it after a connection's first five runs.
    static let genericPlan = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan"

    @Test func aTopicPageWalksTheTopicsIndexWhateverTheStatisticsSay() async throws {
        let url = try await TestDatabase.fresh("topic_plan")
        try await onOwnThread {
            let connection = try TestDatabase.connect(url)
            // 5,000 events of one session and its space, written after the table was last analyzed.
            try Self.insert(5000, session: Self.session, onSpaceTopic: true, on: connection)
            for (topic, index) in [
                (Topic(.workSession, Self.session), "events_work_session_idx"),
                (Topic(.space, Self.space), "events_space_topic_idx"),
            ] {
                let text = try Self.plan(
                    DeliveryReader.topicStatement(topic), [topic.id, Int64(0), 1000, nil, nil, nil],
                    settings: DeliveryReader.topicPlanSettings, on: connection)
                #expect(text.contains("Index Scan using \(index)"), "\(text)")
                #expect(!text.contains("Bitmap") && !text.contains("Sort"), "\(topic): \(text)")
            }
        }
    }

    @Test func aQuietTopicsPageAndHeadDoNotWalkTheRestOfTheLog() async throws {
        let url = try await TestDatabase.fresh("topic_quiet")
        try await onOwnThread {
            let connection = try TestDatabase.connect(url)
            // A session that was busy, then quiet while another wrote 40,000 events; analyzed,
            // so the planner knows the quiet one for a fifth of the log.
            try Self.insert(10000, session: Self.session, onSpaceTopic: false, on: connection)
            try Self.insert(40000, session: Self.busySession, onSpaceTopic: false, on: connection)
            try connection.execute("ANALYZE eventlog.events")
            let topic = Topic(.workSession, Self.session)
            let page = try Self.plan(
                DeliveryReader.topicStatement(topic), [topic.id, Int64(9990), 1000, nil, nil, nil],
                settings: DeliveryReader.topicPlanSettings, on: connection)
            #expect(page.contains("Index Scan using events_work_session_idx"), "\(page)")
            #expect(!page.contains("events_pkey"), "\(page)")
            // Where the page ends: the topic's index, and the log's only for the one row found there.
            let cursor = try Self.cursor(at: 10000, on: connection)
            for (withCursor, bound) in [(false, [] as PostgresBinds), (true, [cursor.transactionID, cursor.position])] {
                let end = try Self.plan(
                    DeliveryReader.lastTransactionStatement(topic, cursor: withCursor),
                    [topic.id, Int64(9990), 1000] + bound,
                    settings: DeliveryReader.topicPlanSettings, on: connection)
                #expect(end.contains("Index Only Scan using events_work_session_idx"), "\(end)")
                #expect(!end.contains("Seq Scan") && !end.contains("Sort"), "\(end)")
                if withCursor { #expect(end.contains("Index Scan Backward using events_work_session_idx"), "\(end)") }
            }
            // The head is prepared: its custom plan (its first five runs on a connection) and
            // its generic one (Postgres's choice after that) both walk the topic's index back.
            for settings in [nil, Self.genericPlan] {
                let head = try Self.plan(
                    DeliveryReader.headStatement(topic), [topic.id, nil, nil], settings: settings, on: connection)
                #expect(head.contains("Index Scan Backward using events_work_session_idx"), "\(head)")
                #expect(!head.contains("events_pkey"), "\(head)")
            }
            // A subscription's catch-up size: the topic's number at `since`, walked back the same way.
            for settings in [nil, Self.genericPlan] {
                let sequence = try Self.plan(
                    DeliveryReader.sequenceStatement(topic), [topic.id, Int64(5000)], settings: settings, on: connection
                )
                #expect(sequence.contains("Index Scan Backward using events_work_session_idx"), "\(sequence)")
                #expect(!sequence.contains("events_pkey"), "\(sequence)")
            }
            #expect(try DeliveryReader.sequence(of: topic, atOrBefore: 5000, on: connection) == 5000)
            #expect(try DeliveryReader.sequence(of: topic, atOrBefore: 0, on: connection) == nil)

            #expect(try DeliveryReader.head(of: topic, on: connection) == TopicHead(position: 10000, topicSeq: 10000))
            let rows = try DeliveryReader.topic(topic, after: 9990, limit: 1000, on: connection)
            #expect(rows.map(\.cursor.position) == Array(9991...10000))
        }
    }

    @Test func aPagesEndIsWhereItsReadEndsFoundInTheTopicsIndexAlone() async throws {
        let url = try await TestDatabase.fresh("topic_page_end")
        try await onOwnThread {
            let connection = try TestDatabase.connect(url)
            // Two sessions whose events interleave in the log; only the first's are on the space's topic.
            for round in 0..<5 {
                try Self.insert(7, session: Self.session, first: round * 7 + 1, onSpaceTopic: true, on: connection)
                try Self.insert(3, session: Self.busySession, first: round * 3 + 1, onSpaceTopic: false, on: connection)
            }
            try connection.execute("VACUUM ANALYZE eventlog.events")
            for (topic, index) in [
                (Topic(.workSession, Self.session), "events_work_session_idx"),
                (Topic(.space, Self.space), "events_space_topic_idx"),
            ] {
                let plan = try Self.plan(
                    DeliveryReader.pageEndStatement(topic), [topic.id, Int64(0), 1000],
                    settings: DeliveryReader.topicPlanSettings, on: connection)
                #expect(plan.contains("Index Only Scan using \(index)"), "\(plan)")
                for after in [Int64(0), 5, 8, 17, 40, 50] {
                    for count in [1, 4, 7, 20, 35, 36] {
                        let page = try DeliveryReader.topic(topic, after: after, limit: count, on: connection)
                        let end = try DeliveryReader.pageEnd(of: topic, after: after, count: count, on: connection)
                        #expect(
                            end == (page.count == count ? page.last?.cursor.position : nil),
                            "\(topic) after \(after), \(count)")
                    }
                }
            }
        }
    }

    @Test func aTopicsReadsArePlannedOncePerConnection() async throws {
        let url = try await TestDatabase.fresh("topic_prepared")
        try await onOwnThread {
            let connection = try TestDatabase.connect(url)
            try Self.insert(50, session: Self.session, onSpaceTopic: true, on: connection)
            for topic in [Topic(.workSession, Self.session), Topic(.space, Self.space)] {
                for after in [Int64(0), 10, 20] {
                    #expect(try DeliveryReader.topic(topic, after: after, limit: 10, on: connection).count == 10)
                    #expect(
                        try DeliveryReader.pageEnd(of: topic, after: after, count: 10, on: connection) == after + 10)
                }
            }
            // Each statement prepared once, and run three times on its generic plan: none planned again.
            let statements = try connection.query(
                """
                SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE NOT from_sql
                """)
            var plans: [String: (generic: Int64, custom: Int64)] = [:]
            for row in 0..<statements.rowCount {
                plans[statements.string(row, 0)!] = (statements.int64(row, 1)!, statements.int64(row, 2)!)
            }
            for topic in [Topic(.workSession, Self.session), Topic(.space, Self.space)] {
                for statement in [DeliveryReader.topicStatement(topic), DeliveryReader.pageEndStatement(topic)] {
                    let counts = try #require(plans[statement], "\(topic): not prepared")
                    #expect(counts.generic == 3 && counts.custom == 0, "\(topic): \(counts)")
                }
            }
            let last = try #require(
                plans[DeliveryReader.lastTransactionStatement(Topic(.workSession, Self.session), cursor: false)])
            #expect(last.generic == 3 && last.custom == 0)

            // A space's head, generic as after a connection's first five: its topic's index,
            // not the space's index of every event, where the session's later events lie
            // between the head and the newest.
            try Self.insert(2000, session: Self.session, first: 51, onSpaceTopic: false, on: connection)
            try connection.execute("ANALYZE eventlog.events")
            let space = Topic(.space, Self.space)
            let head = try Self.plan(
                DeliveryReader.headStatement(space), [space.id, nil, nil],
                settings: Self.genericPlan, on: connection)
            #expect(head.contains("Index Scan Backward using events_space_topic_idx"), "\(head)")
            #expect(try DeliveryReader.head(of: space, on: connection) == TopicHead(position: 50, topicSeq: 50))
        }
    }

    @Test func aHeadWithinACursorIsTheTopicsLastEventAtOrBeforeIt() async throws {
        let url = try await TestDatabase.fresh("topic_head_cursor")
        try await onOwnThread {
            let connection = try TestDatabase.connect(url)
            let topic = Topic(.workSession, Self.session)
            #expect(try DeliveryReader.head(of: topic, on: connection) == nil)
            try Self.insert(10, session: Self.session, onSpaceTopic: false, on: connection)
            let cursor = try Self.cursor(at: 10, on: connection)
            // Later transactions: past the cursor, whatever their positions.
            try Self.insert(5, session: Self.session, first: 11, onSpaceTopic: false, on: connection)
            try Self.insert(5, session: Self.busySession, onSpaceTopic: false, on: connection)
            #expect(
                try DeliveryReader.head(of: topic, until: cursor, on: connection)
                    == TopicHead(position: 10, topicSeq: 10))
            #expect(try DeliveryReader.head(of: topic, on: connection) == TopicHead(position: 15, topicSeq: 15))
            let latest = try Self.cursor(at: 20, on: connection)
            #expect(
                try DeliveryReader.head(of: topic, until: latest, on: connection)
                    == TopicHead(position: 15, topicSeq: 15))
            // A page within the cursor ends at it, also when its limit would reach further.
            let page = try DeliveryReader.topic(topic, after: 5, until: cursor, limit: 100, on: connection)
            #expect(page.map(\.cursor.position) == Array(6...10))
        }
    }
}
