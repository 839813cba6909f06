import Foundation
import Testing
import RoboscopeDomain

/// `as_of` reads: entities as they were at a position or a time, from the log alone.
@Suite(.serialized) struct TimeTravelTests {
    @Test func aMarkerAndItsSessionAsTheyWereAtSeveralMoments() async throws {
        let (server, databaseURL) = try await AuditTests.server.get()
        let client = server.client
        let fixtures = Fixtures(client: client)
        let (space, session) = try await fixtures.spaceAndSession()
        let marker = try await fixtures.marker(in: session, ["label": "v1"])
        let id = Fixtures.id(marker)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        // A moment after the create and before the patch, in the milliseconds `as_of` takes:
        // once the clock is past the millisecond the creation was recorded in.
        let recorded = try scalar(
            databaseURL,
            "SELECT (extract(epoch FROM max(recorded_at)) * 1000000)::bigint FROM eventlog.events WHERE stream_id = $1",
            [Fixtures.id(marker)])
        try await eventually("the clock is past the creation's millisecond") {
            Date().timeIntervalSince1970 * 1_000_000 >= Double(recorded) + 2_000
        }
        let between = formatter.string(from: Date())
        let patched = try await client.patch("/api/v1/markers/\(id)", ["label": "v2", "p1": [0, 0, 0]])
        #expect(try await client.delete("/api/v1/markers/\(id)").status == 204)
        let positions =
            try await client.get("/api/v1/markers/\(id)/history").json["data"]?.array?.map { $0["position"]?.int ?? 0 }
            ?? []
        #expect(positions.count == 3)
        let (created, updated, deleted) = (positions[0], positions[1], positions[2])
        // Each write's details event closes its transaction; other suites append to the same
        // log meanwhile, so "the next position" may not be ours.
        let details =
            try await client.get("/api/v1/audit?entity_type=marker_details&entity_id=\(id)").json["data"]?.array?
            .map { $0["position"]?.int ?? 0 } ?? []
        #expect(details.count == 3)
        let (afterCreate, afterUpdate) = (details[0], details[1])
        #expect(afterCreate > created && afterUpdate > updated)

        let atCreate = try await client.get("/api/v1/markers/\(id)?as_of=\(afterCreate)")
        #expect(atCreate.status == 200)
        #expect(atCreate.json == marker)  // details included, as REST returned it then
        #expect(try await client.get("/api/v1/markers/\(id)?as_of=\(between)").json == marker)
        let atUpdate = try await client.get("/api/v1/markers/\(id)?as_of=\(afterUpdate)")
        #expect(atUpdate.json == patched.json)

        let gone = try await client.get("/api/v1/markers/\(id)?as_of=\(deleted)")
        #expect(gone.status == 404)
        #expect(gone.json["error"]?["reason"] == "deleted")
        let early = try await client.get("/api/v1/markers/\(id)?as_of=\(created - 1)")
        #expect(early.status == 404)
        #expect(early.json["error"]?["reason"] == "not_yet_created")
        let earlyMessage: String = early.json["error"]?["message"]?.string ?? ""
        #expect(earlyMessage.contains("did not exist yet"), "\(earlyMessage)")

        let listed = try await client.get(
            "/api/v1/markers?work_session_id=\(Fixtures.id(session))&as_of=\(afterUpdate)")
        #expect(listed.json == [patched.json])
        #expect(
            try await client.get("/api/v1/markers?work_session_id=\(Fixtures.id(session))&as_of=\(deleted)").json == [])

        #expect(try await client.get("/api/v1/work-sessions/\(Fixtures.id(session))?as_of=\(deleted)").json == session)
        #expect(try await client.get("/api/v1/spaces/\(Fixtures.id(space))?as_of=\(deleted)").json == space)
    }

    /// Year 0000 is valid RFC 3339 but no time Postgres holds: schemathesis found it a 500
    /// (`22008 date/time field value out of range`).
    @Test(arguments: ["yesterday", "-3", "2026-11-22T25:00:00Z", "0000-01-01T00:12:01Z"])
    func anUnparsableAsOfIs400(value: String) async throws {
        let (server, _) = try await AuditTests.server.get()
        let reply = try await server.client.get("/api/v1/spaces/\(EntityID.random())?as_of=\(value)")
        #expect(reply.status == 400)
        #expect(reply.json["error"]?["field"] == "as_of")
    }

    @Test func aTimeBeforeYearOneIsRefusedWhereverATimeIsTaken() async throws {
        let (server, _) = try await AuditTests.server.get()
        let from = try await server.client.get("/api/v1/audit?from=0000-06-01T00:00:00Z")
        #expect(from.status / 100 == 4 && from.json["error"]?["field"] == "from", "\(from.status) \(from.json)")
    }
}
