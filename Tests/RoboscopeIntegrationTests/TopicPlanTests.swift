import Testing
import RoboscopeDomain
@testable import RoboscopePostgres

/// A page of a topic walks the topic's index in position order and stops after the
/// limit, also when the statistics know nothing of the topic's size. Without the plan
/// settings, Postgres chose a bitmap scan of the topic's whole rest and a sort here, and
/// a catch-up of n events cost n².
@Suite struct TopicPlanTests {
    @Test func aTopicPageWalksTheTopicsIndexWhateverTheStatisticsSay() throws {
        let connection = try TestDatabase.connect(try TestDatabase.fresh("topic_plan"))
        let space = EntityID("00000000-0000-4000-8000-000000000001")!
        let session = EntityID("00000000-0000-4000-8000-000000000002")!
        // 5,000 events of one session and its space, written after the table was last analyzed.
        try connection.execute("""
            ALTER TABLE eventlog.events DISABLE TRIGGER USER;
            INSERT INTO eventlog.events (event_id, stream_type, stream_id, stream_version, type, data, metadata,
                                         space_id, work_session_id, hash, work_session_seq, space_seq)
            SELECT gen_random_uuid(), 'marker', gen_random_uuid(), 1, 'marker.created', '{}', '{}',
                   '\(space)', '\(session)', sha256(g::text::bytea), g, g
            FROM generate_series(1, 5000) g;
            ALTER TABLE eventlog.events ENABLE TRIGGER USER;
            """)
        for topic in [Topic(.workSession, session), Topic(.space, space)] {
            let plan = try connection.transaction(DeliveryReader.topicPlanSettings) {
                try connection.query("EXPLAIN " + DeliveryReader.topicStatement(topic), [topic.id, Int64(0), 1000, nil, nil])
            }
            let text = (0..<plan.rowCount).compactMap { plan.string($0, 0) }.joined(separator: "\n")
            #expect(text.contains("Index Scan using events_"), "\(text)")
            #expect(!text.contains("Bitmap") && !text.contains("Sort"), "\(topic): \(text)")
        }
    }
}
