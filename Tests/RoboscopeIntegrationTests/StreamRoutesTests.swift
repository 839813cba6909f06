import Foundation
import Testing
@testable import RoboscopeDomain
@testable import RoboscopePostgres

/// Routing is data: a kind of entity the functions have never heard of, given its row of
/// `eventlog.stream_routes`, is routed by the append to its work session's topic, its
/// space and its tenant, and `roboscope verify`'s checks agree with where it went.
@Suite struct StreamRoutesTests {
    @Test func aKindAddedByOneRowIsRoutedToItsSessionsTopic() async throws {
        let url = try await TestDatabase.fresh("stream_routes")
        let connection = try TestDatabase.connect(url)
        try connection.execute(
            """
            INSERT INTO eventlog.stream_routes (stream_type, session_named_by, session_field)
            VALUES ('annotation', 'annotation', 'work_session_id')
            """)

        let spaceID = EntityID.random()
        _ = try EventStore.append(EventLogTests.spaceCreation(spaceID, tenant: "acme"), on: connection)
        let now = Timestamp(microsecondsSinceEpoch: 1_795_000_000_000_000)
        let session = WorkSession(
            id: .random(), spaceID: spaceID, sessionType: .inspection, status: .active, startedAt: now,
            completedAt: nil, version: 1, meta: [:], createdAt: now, updatedAt: now)
        _ = try EventStore.append(
            AppendBatch(events: [
                PendingEvent(
                    stream: StreamRef(.workSession, session.id), expectedVersion: .noStream, type: .workSessionCreated,
                    payload: .workSession(session), metadata: EventLogTests.provenance)
            ]), on: connection)

        // Created with a second note in one batch (the batch names the session), then
        // edited alone (the stored first event names it).
        let annotation = UUID().uuidString.lowercased()
        func event(_ type: String, expected: String, text: String) -> String {
            """
            {"event_id": "\(UUID().uuidString.lowercased())", "stream_type": "annotation",
             "stream_id": "\(annotation)", "expected_version": \(expected), "type": "\(type)",
             "metadata": {"actor": "test"},
             "data": {"id": "\(annotation)", "work_session_id": "\(session.id)", "text": "\(text)"}}
            """
        }
        for events in [
            [
                event("annotation.created", expected: "0", text: "a"),
                event("annotation.updated", expected: "1", text: "b"),
            ],
            [event("annotation.updated", expected: "2", text: "c")],
        ] {
            let batch = #"{"locks": [], "events": ["# + events.joined(separator: ",") + "]}"
            try connection.transaction { _ = try connection.query("SELECT * FROM eventlog.append($1::jsonb)", [batch]) }
        }

        let routed = try connection.query(
            """
            SELECT work_session_id::text, space_id::text, tenant, work_session_seq, space_seq
            FROM eventlog.events WHERE stream_id = $1::uuid ORDER BY position
            """, [annotation])
        #expect(routed.rowCount == 3)
        for row in 0..<routed.rowCount {
            #expect(routed.string(row, 0) == session.id.description)
            #expect(routed.string(row, 1) == spaceID.description)
            #expect(routed.string(row, 2) == "acme")
            // The session's topic held its own creation as 1.
            #expect(routed.int64(row, 3) == Int64(row) + 2)
            #expect(routed.string(row, 4) == nil, "not on the space's topic")
        }
        #expect(try connection.query("SELECT count(*) FROM eventlog.misrouted_events()").int64(0, 0) == 0)
        #expect(try connection.query("SELECT count(*) FROM eventlog.topic_sequence_breaks()").int64(0, 0) == 0)
    }
}
