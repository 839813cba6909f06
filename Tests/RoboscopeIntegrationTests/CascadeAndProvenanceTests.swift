import Foundation
import Testing
import RoboscopeDomain
import RoboscopePostgres

@Suite struct CascadeAndProvenanceTests {
    @Test func deletingASpaceDeletesChildrenThroughTheirOwnEvents() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let space = try await fixtures.space()
        var markerIDs: [String] = []
        var sessionIDs: [String] = []
        for _ in 0..<2 {
            let session = try await fixtures.session(in: space)
            sessionIDs.append(Fixtures.id(session))
            for _ in 0..<3 { markerIDs.append(Fixtures.id(try await fixtures.marker(in: session))) }
        }
        let deleted = try await client.delete(
            "/api/v1/spaces/\(Fixtures.id(space))", headers: ["X-User-Id": "inspector-9"])
        #expect(deleted.status == 204)

        let connection = try TestDatabase.connect(try await SharedServer.database())
        let remaining = try connection.query(
            """
            SELECT (SELECT count(*) FROM work_sessions WHERE space_id = $1)
                 + (SELECT count(*) FROM markers WHERE id = ANY($2::uuid[]))
                 + (SELECT count(*) FROM marker_details WHERE marker_id = ANY($2::uuid[]))
            """, [Fixtures.id(space), "{\(markerIDs.joined(separator: ","))}"])
        #expect(remaining.int64(0, 0) == 0)

        let events = try connection.query(
            """
            SELECT type, stream_id::text, metadata->>'causation_id', event_id::text, metadata->>'actor'
            FROM eventlog.events WHERE type LIKE '%.deleted' AND metadata->>'correlation_id' = (
                SELECT metadata->>'correlation_id' FROM eventlog.events WHERE stream_id = $1 AND type = 'space.deleted')
            ORDER BY position
            """, [Fixtures.id(space)])
        let types = (0..<events.rowCount).map { events.string($0, 0)! }
        #expect(types.filter { $0 == "space.deleted" }.count == 1)
        #expect(types.filter { $0 == "work_session.deleted" }.count == 2)
        #expect(types.filter { $0 == "marker.deleted" }.count == 6)
        #expect(types.filter { $0 == "marker_details.deleted" }.count == 6)
        #expect(Set((0..<events.rowCount).map { events.string($0, 4) }) == ["inspector-9"])
        // Every child names the event that caused it; the space's event causes the sessions'.
        let eventIDs = Set((0..<events.rowCount).map { events.string($0, 3)! })
        for row in 0..<events.rowCount where events.string(row, 0) != "space.deleted" {
            #expect(events.string(row, 2).map(eventIDs.contains) == true)
        }
    }

    @Test func eventsRecordWhoAndHow() async throws {
        let client = try await SharedServer.client()
        let reply = try await client.send(
            "POST", "/api/v1/spaces",
            body: Data(#"{"key":"\#(Fixtures.uniqueKey())","name":"n"}"#.utf8),
            headers: [
                "X-User-Id": "tech-42", "User-Agent": "RoboscopeApp/3.1", "X-Request-Id": "req-777",
                "X-Correlation-Id": "flow-9",
            ]
        )
        #expect(reply.status == 201)
        let connection = try TestDatabase.connect(try await SharedServer.database())
        let row = try connection.query(
            """
            SELECT metadata, type, stream_type, stream_version, recorded_at IS NOT NULL FROM eventlog.events \
            WHERE stream_id = $1
            """,
            [Fixtures.id(reply.json)]
        )
        #expect(row.rowCount == 1)
        let metadata = try JSONDecoder().decode(JSONValue.self, from: Data(row.string(0, 0)!.utf8))
        #expect(metadata["actor"] == "tech-42")
        #expect(metadata["user_agent"] == "RoboscopeApp/3.1")
        #expect(metadata["request_id"] == "req-777")
        #expect(metadata["correlation_id"] == "flow-9")
        #expect(metadata["client_address"] == "127.0.0.1")
        #expect(metadata["causation_id"] == .null)
        #expect(row.string(0, 1) == "space.created")
        #expect(row.string(0, 2) == "space")
        #expect(row.int64(0, 3) == 1)

        let anonymous = try await Fixtures(client: client).space()
        let actor = try connection.query(
            "SELECT metadata->>'actor' FROM eventlog.events WHERE stream_id = $1", [Fixtures.id(anonymous)])
        #expect(actor.string(0, 0) == "anonymous")
    }
    /// A batch's document gives the request's metadata once and each event's cause apart:
    /// every stored event still holds the whole metadata, with its own cause.
    @Test func aBulkRequestsEventsEachHoldTheWholeMetadataAndTheirOwnCause() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let marker: JSONValue = [
            "work_session_id": .string(Fixtures.id(session)),
            "p1": [0, 0, 0], "p2": [1, 0, 0], "p3": [1, 0, 1], "p4": [0, 0, 1],
        ]
        let reply = try await client.send(
            "POST", "/api/v1/markers/bulk", json: ["markers": [marker, marker]],
            headers: [
                "X-User-Id": "tech-7", "User-Agent": "RoboscopeApp/3.2", "X-Correlation-Id": "bulk-\(UUID())",
                "Idempotency-Key": "bulk-\(UUID())",
            ]
        )
        #expect(reply.status == 201)
        let connection = try TestDatabase.connect(try await SharedServer.database())
        let rows = try connection.query(
            """
            SELECT type, event_id::text, metadata::text FROM eventlog.events
            WHERE stream_id IN (SELECT (m->>'id')::uuid FROM jsonb_array_elements($1::jsonb) AS m) ORDER BY position
            """, [String(decoding: try JSONEncoder().encode(reply.json), as: UTF8.self)])
        #expect(rows.rowCount == 4)
        var created: String?
        for row in 0..<rows.rowCount {
            let metadata = try JSONDecoder().decode(JSONValue.self, from: Data(rows.string(row, 2)!.utf8))
            #expect(
                metadata.objectValue.map { Set($0.keys) } == [
                    "actor", "request_id", "correlation_id", "causation_id", "client_address", "user_agent",
                    "client_mutation_id", "tenant", "scope",
                ])
            #expect(metadata["actor"] == "tech-7")
            #expect(metadata["user_agent"] == "RoboscopeApp/3.2")
            if rows.string(row, 0) == "marker.created" {
                #expect(metadata["causation_id"] == .null)
                created = rows.string(row, 1)
            } else {
                #expect(
                    metadata["causation_id"] == created.map(JSONValue.string), "details name their marker's creation")
            }
        }
    }
}
