import Testing
import RoboscopeDomain
@testable import RoboscopePostgres

/// The fold of an append reads the batch's own rows by position, whatever the statistics
/// say. Its plan is generic; before the log's first ANALYZE the planner took the stream
/// type for as selective as the position range and ANDed a scan of the stream index
/// over every event of the type, so a young database's creates read the whole kind.
@Suite struct FoldPlanTests {
    @Test func aBatchsLastEventsComeFromItsPositionsAlone() async throws {
        let url = try await TestDatabase.fresh("fold_plan")
        try await onOwnThread {
            let connection = try TestDatabase.connect(url)
            // Never analyzed: 5,000 marker events and no statistics.
            try connection.execute("ALTER TABLE eventlog.events SET (autovacuum_enabled = false)")
            try TopicPlanTests.insert(5000, session: TopicPlanTests.session, onSpaceTopic: false, on: connection)
            let transaction = try connection.query(
                "SELECT transaction_id::text FROM eventlog.events WHERE position = 4000"
            ).string(0, 0)!
            try connection.execute(
                """
                SET plan_cache_mode = force_generic_plan;
                PREPARE fold_read(bigint, bigint, xid8, text) AS SELECT * FROM eventlog.last_events($1, $2, $3, $4);
                """)
            let plan = try connection.query("EXPLAIN EXECUTE fold_read(4000, 4001, '\(transaction)', 'marker')")
            let text = (0..<plan.rowCount).compactMap { plan.string($0, 0) }.joined(separator: "\n")
            #expect(text.contains("events_pkey"), "\(text)")
            #expect(!text.contains("events_stream_version_key"), "\(text)")

            let folded = try connection.query("EXECUTE fold_read(4000, 4001, '\(transaction)', 'marker')")
            #expect(folded.rowCount == 2)
        }
    }
}
