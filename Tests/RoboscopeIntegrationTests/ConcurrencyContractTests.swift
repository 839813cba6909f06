import Foundation
import Testing
import RoboscopeDomain
import RoboscopePostgres

@Suite struct ConcurrencyContractTests {
    @Test func sameVersionTwiceExactlyOneWins() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        for _ in 0..<5 {
            let marker = try await fixtures.marker(in: try await fixtures.session(in: try await fixtures.space()))
            let path = "/api/v1/markers/\(Fixtures.id(marker))"
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for label in ["left", "right"] {
                    group.addTask { try await client.patch(path, ["label": .string(label), "version": 1]).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.sorted() == [200, 409])
            #expect(try await client.get(path).json["version"] == 2)
        }
    }

    @Test func unconditionalPatchesAllApply() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let path = "/api/v1/work-sessions/\(Fixtures.id(session))"
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<20 {
                group.addTask { try await client.patch(path, ["meta": ["writer": .integer(Int64(index))]]).status }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 20))
        #expect(try await client.get(path).json["version"] == 21)
    }

    @Test func markerCreatesRacingASessionDeleteLeaveNoOrphans() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let (_, session) = try await fixtures.spaceAndSession()
        let body = Fixtures.markerFields(in: session)
        let request = body
        async let creates: [Int] = withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<30 { group.addTask { try await client.post("/api/v1/markers", .object(request)).status } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        // The delete once the creates are landing: the first of them is in.
        try await eventually("a create has landed") {
            try await client.get("/api/v1/markers?work_session_id=\(Fixtures.id(session))").json.array?.isEmpty == false
        }
        let deleted = try await client.delete("/api/v1/work-sessions/\(Fixtures.id(session))")
        #expect(deleted.status == 204)
        let statuses = try await creates
        #expect(statuses.allSatisfy { [201, 404, 422].contains($0) })
        let connection = try TestDatabase.connect(try await SharedServer.database())
        let orphans = try connection.query(
            "SELECT count(*) FROM markers WHERE work_session_id = $1", [Fixtures.id(session)]
        ).int64(0, 0)
        #expect(orphans == 0)
    }
}
