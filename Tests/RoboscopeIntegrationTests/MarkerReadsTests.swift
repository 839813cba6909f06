import Foundation
import Testing
import RoboscopeDomain
import RoboscopePostgres

/// Markers are read from the projection column by column (MarkerRows); the log, read
/// through `as_of`, must give the very same JSON for every shape a marker can take.
@Suite struct MarkerReadsTests {
    @Test func columnReadsMatchTheLog() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let shapes: [[String: JSONValue]] = [
            [:],
            [
                "label": "crack \"A\" \\ é 😀", "color": "#FF8800", "p1": [0.1, -2.5e-3, 1e15],
                "p4": [-0.0, 123456.789, 4],
            ],
            [
                "meta": ["n": 1, "d": 1.5, "big": 9_007_199_254_740_993, "nested": ["list": [true, .null, "x"]]],
                "custom_props": ["a": "b"],
            ],
            [
                "calibrated_data": [
                    "p1": [1, 1, 1], "p2": [2, 2, 2], "p3": [3, 3, 3], "p4": [4, 4, 4], "center": [2.5, 2.5, 0.1],
                ]
            ],
        ]
        var ids: [String] = []
        for shape in shapes { ids.append(Fixtures.id(try await fixtures.marker(in: session, shape))) }
        // One without details, one with details carrying custom props.
        #expect(try await client.delete("/api/v1/markers/\(ids[0])/details").status == 204)
        #expect(
            try await client.put(
                "/api/v1/markers/\(ids[1])/details", ["custom_props": ["k": [1, 2]], "long_size": 0.30000000000000004]
            ).status == 200)

        let connection = try TestDatabase.connect(try await SharedServer.database())
        let head = try connection.query("SELECT max(position) FROM eventlog.events").int64(0, 0)!
        let sessionID = Fixtures.id(session)
        let now = try await client.get("/api/v1/markers?work_session_id=\(sessionID)")
        let logged = try await client.get("/api/v1/markers?work_session_id=\(sessionID)&as_of=\(head)")
        #expect(now.status == 200 && logged.status == 200)
        #expect(now.json == logged.json)
        #expect(now.json.array?.count == shapes.count)
        for id in ids {
            #expect(
                try await client.get("/api/v1/markers/\(id)").json
                    == (try await client.get("/api/v1/markers/\(id)?as_of=\(head)")).json)
        }
        #expect(now.json.array?.first?["details"] == .null)
        #expect(now.json.array?[1]["details"]?["custom_props"]?["k"] == [1, 2])
    }
}
