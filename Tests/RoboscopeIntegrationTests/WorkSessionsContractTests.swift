import Foundation
import Testing
import RoboscopeDomain

@Suite struct WorkSessionsContractTests {
    @Test func createReadListFilter() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let space = try await fixtures.space()
        let inspection = try await fixtures.session(in: space)
        #expect(inspection["status"] == "draft")
        #expect(inspection["session_type"] == "inspection")
        #expect(inspection["completed_at"] == .null)
        #expect(inspection["version"] == 1)
        #expect(inspection["meta"] == [:])
        #expect(isWireTimestamp(inspection["started_at"]))
        let repair = try await fixtures.session(
            in: space,
            [
                "session_type": "repair", "status": "active",
                "started_at": "2026-11-21T10:00:00.250+02:00",
            ])
        #expect(repair["started_at"] == "2026-11-21T08:00:00Z")

        let all = try await client.get("/api/v1/work-sessions?space_id=\(Fixtures.id(space))")
        #expect(all.json.array?.map { $0["id"] } == [inspection["id"], repair["id"]])
        let active = try await client.get("/api/v1/work-sessions?space_id=\(Fixtures.id(space))&status=active")
        #expect(active.json.array?.map { $0["id"] } == [repair["id"]])
        let inspections = try await client.get(
            "/api/v1/work-sessions?space_id=\(Fixtures.id(space))&session_type=inspection")
        #expect(inspections.json.array?.map { $0["id"] } == [inspection["id"]])
        #expect(try await client.get("/api/v1/work-sessions/\(Fixtures.id(repair))").json == repair)
    }

    @Test func badInputIsNamed() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let space = try await fixtures.space()
        let badStatus = try await client.post(
            "/api/v1/work-sessions", ["space_id": space["id"]!, "status": "finished"])
        #expect(badStatus.status == 422)
        #expect(badStatus.json["error"]?["field"] == "status")
        let badType = try await client.post(
            "/api/v1/work-sessions", ["space_id": space["id"]!, "session_type": "audit"])
        #expect(badType.json["error"]?["field"] == "session_type")
        let missingSpace = try await client.post(
            "/api/v1/work-sessions", ["space_id": .string(EntityID.random().description)])
        #expect(missingSpace.status == 422)
        #expect(missingSpace.json["error"]?["field"] == "space_id")
        let badSpace = try await client.post("/api/v1/work-sessions", ["space_id": "x"])
        #expect(badSpace.json["error"]?["field"] == "space_id")
        let badFilter = try await client.get("/api/v1/work-sessions?status=nope")
        #expect(badFilter.status == 400)
        #expect(badFilter.json["error"]?["field"] == "status")
        let badSpaceFilter = try await client.get("/api/v1/work-sessions?space_id=nope")
        #expect(badSpaceFilter.status == 400)
    }

    @Test func finishingStampsCompletion() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let done = try await client.patch("/api/v1/work-sessions/\(Fixtures.id(session))", ["status": "done"])
        #expect(done.status == 200)
        #expect(isWireTimestamp(done.json["completed_at"]))
        #expect(done.json["version"] == 2)
        let backwards = try await client.patch(
            "/api/v1/work-sessions/\(Fixtures.id(session))", ["completed_at": "2000-01-01T00:00:00Z"])
        #expect(backwards.status == 422)
        #expect(backwards.json["error"]?["field"] == "completed_at")
    }
}
