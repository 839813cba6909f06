import Foundation
import Testing
import RoboscopeDomain

@Suite struct SpacesContractTests {
    @Test func createReturnsEveryFieldWithNullsPresent() async throws {
        let client = try await SharedServer.client()
        let key = Fixtures.uniqueKey()
        let reply = try await client.post(
            "/api/v1/spaces", ["key": .string(key), "name": "Hull 7", "meta": ["deck": 3]])
        #expect(reply.status == 201)
        let space = reply.json
        #expect(space["key"]?.string == key)
        #expect(space["name"]?.string == "Hull 7")
        #expect(space["active"] == true)
        #expect(space["version"] == 1)
        #expect(space["meta"] == ["deck": 3])
        for field in ["description", "model_glb_url", "model_usdc_url", "preview_url", "scan_url", "ml_model_url"] {
            #expect(space[field] == .null, "\(field) must be present as null")
        }
        #expect(isWireTimestamp(space["created_at"]))
        #expect(isWireTimestamp(space["updated_at"]))
        #expect(EntityID(space["id"]?.string ?? "")?.description == space["id"]?.string)
        #expect(reply.header("X-Request-Id") != nil)

        let fetched = try await client.get("/api/v1/spaces/\(Fixtures.id(space))")
        #expect(fetched.status == 200)
        #expect(fetched.json == space)
        let upper = try await client.get("/api/v1/spaces/\(Fixtures.id(space).uppercased())")
        #expect(upper.json == space)
    }

    @Test func listFiltersByKeyAndHidesInactive() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let active = try await fixtures.space()
        let inactive = try await fixtures.space(["active": false])
        let byKey = try await client.get("/api/v1/spaces?key=\(active["key"]!.string!)")
        #expect(byKey.status == 200)
        #expect(byKey.json.array?.map { $0["id"] } == [active["id"]])
        let hidden = try await client.get("/api/v1/spaces?key=\(inactive["key"]!.string!)")
        #expect(hidden.json == [])
        let shown = try await client.get("/api/v1/spaces?key=\(inactive["key"]!.string!)&include_inactive=true")
        #expect(shown.json.array?.map { $0["id"] } == [inactive["id"]])
        let bad = try await client.get("/api/v1/spaces?include_inactive=maybe")
        #expect(bad.status == 400)
        #expect(bad.json["error"]?["field"] == "include_inactive")
    }

    @Test func patchBumpsVersionAndChecksIt() async throws {
        let client = try await SharedServer.client()
        let space = try await Fixtures(client: client).space()
        let path = "/api/v1/spaces/\(Fixtures.id(space))"
        let patched = try await client.patch(path, ["name": "Renamed", "description": "port side", "version": 1])
        #expect(patched.status == 200)
        #expect(patched.json["version"] == 2)
        #expect(patched.json["name"] == "Renamed")
        #expect(patched.json["description"] == "port side")
        #expect(patched.json["created_at"] == space["created_at"])

        let stale = try await client.patch(path, ["name": "Again", "version": 1])
        #expect(stale.status == 409)
        #expect(stale.json["error"]?["code"] == "version_conflict")
        #expect(stale.json["error"]?["current_version"] == 2)

        let staleIfMatch = try await client.patch(path, ["name": "Again"], headers: ["If-Match": "\"1\""])
        #expect(staleIfMatch.status == 409)
        let goodIfMatch = try await client.patch(path, ["name": "Again"], headers: ["If-Match": "\"2\""])
        #expect(goodIfMatch.status == 200)
        #expect(goodIfMatch.json["version"] == 3)
        let unconditional = try await client.patch(path, ["description": nil])
        #expect(unconditional.json["version"] == 4)
        #expect(unconditional.json["description"] == .null)
    }

    @Test func duplicateKeyIsAConflict() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let first = try await fixtures.space()
        let again = try await client.post("/api/v1/spaces", ["key": first["key"]!, "name": "Copy"])
        #expect(again.status == 409)
        #expect(again.json["error"]?["field"] == "key")
        let other = try await fixtures.space()
        let renamed = try await client.patch("/api/v1/spaces/\(Fixtures.id(other))", ["key": first["key"]!])
        #expect(renamed.status == 409)
    }

    @Test func keyIsFreeAgainAfterDelete() async throws {
        let client = try await SharedServer.client()
        let space = try await Fixtures(client: client).space()
        #expect(try await client.delete("/api/v1/spaces/\(Fixtures.id(space))").status == 204)
        #expect(try await client.get("/api/v1/spaces/\(Fixtures.id(space))").status == 404)
        #expect(try await client.delete("/api/v1/spaces/\(Fixtures.id(space))").status == 404)
        let reused = try await client.post("/api/v1/spaces", ["key": space["key"]!, "name": "Reborn"])
        #expect(reused.status == 201)
    }

    @Test func validationNamesTheField() async throws {
        let client = try await SharedServer.client()
        let cases: [(JSONValue, String)] = [
            (["name": "no key"], "key"),
            (["key": .string(Fixtures.uniqueKey())], "name"),
            (["key": .string(Fixtures.uniqueKey()), "name": "n", "meta": "text"], "meta"),
            (["key": .string(Fixtures.uniqueKey()), "name": .string(String(repeating: "n", count: 201))], "name"),
            (["key": .string(Fixtures.uniqueKey()), "name": "n", "id": "not-a-uuid"], "id"),
        ]
        for (body, field) in cases {
            let reply = try await client.post("/api/v1/spaces", body)
            #expect(reply.status == 422, "\(body)")
            #expect(reply.json["error"]?["field"]?.string == field)
            #expect(reply.json["error"]?["message"]?.string?.contains(field) == true)
        }
        let notObject = try await client.post("/api/v1/spaces", [1, 2])
        #expect(notObject.status == 422)
        let badID = try await client.get("/api/v1/spaces/12345")
        #expect(badID.status == 422)
        #expect(badID.json["error"]?["field"] == "id")
        let unknown = try await client.get("/api/v1/spaces/\(EntityID.random())")
        #expect(unknown.status == 404)
        #expect(unknown.json["error"]?["code"] == "not_found")
    }
}
