import Foundation
import Testing
import RoboscopeDomain

@Suite struct MarkersContractTests {
    @Test func createCarriesComputedDetails() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let marker = try await fixtures.marker(
            in: session, ["label": "crack", "color": "#A1B2C3", "custom_props": ["severity": 2]])
        #expect(marker["version"] == 1)
        #expect(marker["p3"] == [2, 0, 4])
        #expect(marker["calibrated_data"] == .null)
        #expect(marker["custom_props"] == ["severity": 2])
        let details = try #require(marker["details"])
        // Corners span x 0…2 and z 1…4.
        #expect(details["marker_id"] == marker["id"])
        #expect(details["center_location_long"]?.double == 2.5)
        #expect(details["center_location_cross"]?.double == 1)
        #expect(details["near_distance"]?.double == 1)
        #expect(details["far_distance"]?.double == 4)
        #expect(details["left_distance"]?.double == 0)
        #expect(details["right_distance"]?.double == 2)
        #expect(details["long_size"]?.double == 3)
        #expect(details["cross_size"]?.double == 2)
        #expect(details["custom_props"] == [:])
        #expect(isWireTimestamp(details["created_at"]))

        #expect(try await client.get("/api/v1/markers/\(Fixtures.id(marker))").json == marker)
        let list = try await client.get("/api/v1/markers?work_session_id=\(Fixtures.id(session))")
        #expect(list.json == [marker])
        #expect(try await client.get("/api/v1/markers/\(Fixtures.id(marker))/details").json == details)
    }

    @Test func movingPointsRecalculatesAndKeepsDetailsCustomProps() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let marker = try await fixtures.marker(in: try await fixtures.session(in: try await fixtures.space()))
        let path = "/api/v1/markers/\(Fixtures.id(marker))"
        let put = try await client.put(path + "/details", ["custom_props": ["checked_by": "ana"]])
        #expect(put.status == 200)
        #expect(put.json["custom_props"] == ["checked_by": "ana"])
        let moved = try await client.patch(path, ["p3": [5, 0, 9], "version": 1])
        #expect(moved.status == 200)
        #expect(moved.json["version"] == 2)
        #expect(moved.json["details"]?["far_distance"]?.double == 9)
        #expect(moved.json["details"]?["right_distance"]?.double == 5)
        #expect(moved.json["details"]?["custom_props"] == ["checked_by": "ana"])

        let overridden = try await client.put(path + "/details", ["long_size": 42.5])
        #expect(overridden.json["long_size"]?.double == 42.5)
        let recalculated = try await client.send("POST", path + "/details/calculate")
        #expect(recalculated.status == 200)
        #expect(recalculated.json["long_size"]?.double == 8)
        #expect(recalculated.json["custom_props"] == ["checked_by": "ana"])

        #expect(try await client.delete(path + "/details").status == 204)
        #expect(try await client.get(path + "/details").status == 404)
        #expect(try await client.get(path).json["details"] == .null)
        #expect(try await client.delete(path + "/details").status == 404)
        let created = try await client.put(path + "/details", ["custom_props": [:]])
        #expect(created.status == 201)
        #expect(created.json["long_size"]?.double == 8)
    }

    @Test func markerValidation() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let base = Fixtures.markerFields(in: session)
        let cases: [([String: JSONValue], String)] = [
            (["p1": [0, 0]], "p1"),
            (["p2": [0, 0, "1"]], "p2"),
            (["p4": nil], "p4"),
            (["color": "#12345"], "color"),
            (["label": .string(String(repeating: "l", count: 201))], "label"),
            (["work_session_id": "abc"], "work_session_id"),
            (["work_session_id": .string(EntityID.random().description)], "work_session_id"),
            (
                [
                    "calibrated_data": [
                        "p1": [0, 0, 0], "p2": [0, 0, 0], "p3": [0, 0, 0], "p4": [0, 0, 0], "center": [1],
                    ]
                ], "calibrated_data.center"
            ),
        ]
        for (change, field) in cases {
            let reply = try await client.post("/api/v1/markers", .object(base.merging(change) { $1 }))
            #expect(reply.status == 422, "\(change)")
            #expect(reply.json["error"]?["field"]?.string == field, "\(change)")
        }
        // 1e400 overflows to infinity when parsed: not a finite number.
        let infinite = try await client.send(
            "POST", "/api/v1/markers",
            body: Data(
                (#"{"work_session_id":"\#(Fixtures.id(session))","#
                    + #""p1":[1e400,0,0],"p2":[0,0,0],"p3":[0,0,0],"p4":[0,0,0]}"#).utf8)
        )
        #expect(infinite.status == 422 || infinite.status == 400)
        #expect(try await client.get("/api/v1/markers?work_session_id=\(Fixtures.id(session))").json == [])
        #expect(try await client.get("/api/v1/markers").status == 400)
    }

    @Test func calibratedDataIsStoredAsGiven() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let calibrated: JSONValue = [
            "p1": [0.1, 0, 0], "p2": [1, 0, 0.25], "p3": [1, 0, 1], "p4": [0, 0, 1], "center": [0.5, 0, 0.5],
        ]
        let marker = try await fixtures.marker(
            in: try await fixtures.session(in: try await fixtures.space()), ["calibrated_data": calibrated])
        #expect(marker["calibrated_data"] == calibrated)
    }

    @Test func bulkIsAllOrNothing() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let good = Fixtures.markerFields(in: session)
        var items = Array(repeating: JSONValue.object(good), count: 5)
        items[3] = .object(good.merging(["color": "blue"]) { $1 })
        let refused = try await client.post("/api/v1/markers/bulk", ["markers": .array(items)])
        #expect(refused.status == 422)
        #expect(refused.json["error"]?["field"] == "markers[3].color")
        #expect(refused.json["error"]?["index"] == 3)
        #expect(try await client.get("/api/v1/markers?work_session_id=\(Fixtures.id(session))").json == [])

        let thousand = (0..<1000).map { index -> JSONValue in
            .object(good.merging(["label": .string("m\(index)"), "p1": [.number(Double(index)), 0, 0]]) { $1 })
        }
        let stored = try await client.post("/api/v1/markers/bulk", ["markers": .array(thousand)])
        #expect(stored.status == 201)
        #expect(stored.json.count == 1000)
        #expect(stored.json[999]?["label"] == "m999")
        #expect(stored.json[999]?["details"]?["left_distance"]?.double == 0)
        let listed = try await client.get("/api/v1/markers?work_session_id=\(Fixtures.id(session))")
        #expect(listed.json.count == 1000)

        // A repeated id inside one request fails the request without storing anything.
        let id = JSONValue.string(EntityID.random().description)
        let twice = try await client.post(
            "/api/v1/markers/bulk",
            ["markers": [.object(good.merging(["id": id]) { $1 }), .object(good.merging(["id": id]) { $1 })]])
        #expect(twice.status == 422)
        #expect(try await client.get("/api/v1/markers/\(id.string!)").status == 404)
    }

    /// A create reads its session's place once (WorkSessionPlaces); a session deleted
    /// after that is refused by the append, and the client hears the same 422 as for a
    /// session that never existed, with nothing stored.
    @Test func aCreateInASessionDeletedSinceItsLastCreateIsRefusedLikeAnUnknownOne() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        _ = try await fixtures.marker(in: session)
        #expect(try await client.delete("/api/v1/work-sessions/\(Fixtures.id(session))").status == 204)

        var marker = Fixtures.markerFields(in: session)
        for _ in 0..<2 {
            let refused = try await client.post("/api/v1/markers", .object(marker))
            #expect(refused.status == 422)
            #expect(refused.json["error"]?["field"] == "work_session_id")
            #expect(refused.json["error"]?["message"]?.string?.contains("does not exist") == true)
        }
        let bulk = try await client.post("/api/v1/markers/bulk", ["markers": [.object(marker)]])
        #expect(bulk.status == 422)
        #expect(bulk.json["error"]?["field"] == "markers[0].work_session_id")
        let unknown = EntityID.random().description
        marker["work_session_id"] = .string(unknown)
        let never = try await client.post("/api/v1/markers", .object(marker))
        #expect(never.status == 422)
        #expect(never.json["error"]?["message"] == .string("work_session_id: work session \(unknown) does not exist"))

        let connection = try TestDatabase.connect(try await SharedServer.database())
        let stored = try connection.query(
            "SELECT count(*) FROM eventlog.events WHERE work_session_id = $1 AND type = 'marker.created'",
            [Fixtures.id(session)]
        )
        #expect(stored.int64(0, 0) == 1)
    }

    @Test func clientChosenIDsAreUniqueAcrossRequests() async throws {
        let client = try await SharedServer.client()
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let id = JSONValue.string(EntityID.random().description.uppercased())
        let first = try await fixtures.marker(in: session, ["id": id])
        #expect(first["id"]?.string == id.string!.lowercased())
        var body = Fixtures.markerFields(in: session)
        body["id"] = id
        let again = try await client.post("/api/v1/markers", .object(body))
        #expect(again.status == 409)
    }
}
