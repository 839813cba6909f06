import Foundation
import Testing
import RoboscopeDomain
import RoboscopePostgres

/// `GET /api/v1/integrity` and the scoped chain check under it: an edited and a removed
/// event are named, in the scope they belong to and not in another.
@Suite(.serialized) struct IntegrityTests {
    /// Two sessions in a space, markers moved in both.
    func history() async throws -> (ServerProcess, url: String, sessions: [JSONValue], space: JSONValue) {
        let url = try await TestDatabase.fresh("integrity")
        let server = try await ServerProcess(databaseURL: url)
        let fixtures = Fixtures(client: server.client)
        let space = try await fixtures.space()
        var sessions: [JSONValue] = []
        for _ in 0..<2 {
            let session = try await fixtures.session(in: space)
            let marker = try await fixtures.marker(in: session)
            _ = try await server.client.patch("/api/v1/markers/\(Fixtures.id(marker))", ["p1": [0, 0, 2]])
            _ = try await server.client.patch("/api/v1/markers/\(Fixtures.id(marker))", ["label": "again"])
            sessions.append(session)
        }
        return (server, url, sessions, space)
    }

    func tamper(_ url: String, _ sql: String, _ parameters: [String?]) throws {
        let connection = try TestDatabase.connect(url)
        try connection.transaction {
            try connection.query("ALTER TABLE eventlog.events DISABLE TRIGGER events_append_only")
            try connection.query(sql, parameters)
            try connection.query("ALTER TABLE eventlog.events ENABLE TRIGGER events_append_only")
        }
    }

    /// The marker events of a session: (position, stream id, version).
    func markerEvents(_ url: String, _ session: JSONValue) throws -> [(Int64, String, Int64)] {
        let result = try TestDatabase.connect(url).query(
            """
            SELECT position, stream_id::text, stream_version FROM eventlog.events WHERE stream_type = 'marker' \
            AND work_session_id = $1::uuid ORDER BY position
            """,
            [Fixtures.id(session)])
        return (0..<result.rowCount).map { (result.int64($0, 0)!, result.string($0, 1)!, result.int64($0, 2)!) }
    }

    @Test func anIntactSessionSpaceAndLog() async throws {
        let (server, url, sessions, space) = try await history()
        defer { server.stopWithoutWaiting() }
        let session = try await server.client.get("/api/v1/integrity?work_session_id=\(Fixtures.id(sessions[0]))")
        #expect(session.status == 200)
        #expect(session.json["intact"] == true)
        #expect(session.json["first_broken_link"] == .null)
        // The session, its marker and the marker's details.
        #expect(session.json["streams"] == 3)
        #expect(session.json["checked_events"] == 6, "created, details, moved, details again, relabelled")
        #expect(isWireTimestamp(session.json["checked_at"]))
        let wholeSpace = try await server.client.get("/api/v1/integrity?space_id=\(Fixtures.id(space))")
        #expect(wholeSpace.json["streams"] == 7)
        let log = try await server.client.get("/api/v1/integrity")
        #expect(log.json["scope"] == "log")
        #expect(log.json["checked_events"]?.int == (try scalar(url, "SELECT count(*) FROM eventlog.events")))
        // The same, below the API.
        let report = try HashChain.check(
            .workSession(EntityID(Fixtures.id(sessions[0]))!), on: TestDatabase.connect(url))
        #expect(report.brokenLink == nil && report.checkedEvents == 6)
    }

    @Test func anEditedEventIsNamedInItsScopeOnly() async throws {
        let (server, url, sessions, space) = try await history()
        defer { server.stopWithoutWaiting() }
        let (position, _, _) = try markerEvents(url, sessions[1])[1]
        try tamper(
            url,
            """
            UPDATE eventlog.events SET metadata = jsonb_set(metadata, '{actor}', '\"someone else\"') WHERE \
            position = $1
            """,
            [String(position)])
        let broken = try await server.client.get("/api/v1/integrity?work_session_id=\(Fixtures.id(sessions[1]))")
        #expect(broken.json["intact"] == false)
        #expect(broken.json["first_broken_link"]?["position"]?.int == position)
        #expect(broken.json["first_broken_link"]?["problem"]?.string?.contains("does not match") == true)
        #expect(
            try await server.client.get("/api/v1/integrity?space_id=\(Fixtures.id(space))").json["first_broken_link"]?[
                "position"]?.int == position)
        #expect(
            try await server.client.get("/api/v1/integrity?work_session_id=\(Fixtures.id(sessions[0]))").json["intact"]
                == true,
            "the other session is intact")
    }

    @Test func aRemovedEventIsNamedAtTheNextOne() async throws {
        let (server, url, sessions, _) = try await history()
        defer { server.stopWithoutWaiting() }
        let events = try markerEvents(url, sessions[0])
        let (_, stream, _) = events[1]
        try tamper(
            url,
            "DELETE FROM eventlog.events WHERE stream_type = 'marker' AND stream_id = $1::uuid AND stream_version = 2",
            [stream])
        let broken = try await server.client.get("/api/v1/integrity?work_session_id=\(Fixtures.id(sessions[0]))")
        #expect(broken.json["intact"] == false)
        #expect(broken.json["first_broken_link"]?["position"]?.int == events[2].0)
        #expect(broken.json["first_broken_link"]?["version"] == 3)
        #expect(broken.json["first_broken_link"]?["problem"] == "version 2 of the stream is missing")
    }

    @Test func badScopesAreRefused() async throws {
        let (server, _, sessions, space) = try await history()
        defer { server.stopWithoutWaiting() }
        #expect(
            try await server.client.get("/api/v1/integrity?work_session_id=nope").json["error"]?["field"]
                == "work_session_id")
        #expect(
            try await server.client.get(
                "/api/v1/integrity?work_session_id=\(Fixtures.id(sessions[0]))&space_id=\(Fixtures.id(space))"
            ).status == 400)
        #expect(try await server.client.get("/api/v1/integrity?space_id=\(UUID().uuidString)").status == 404)
    }
}
