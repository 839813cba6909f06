import Foundation
import Testing
import RoboscopeDomain
import RoboscopePostgres

/// The audit trail and entity histories over a scripted history, against the real
/// Postgres through the real binary.
@Suite(.serialized) struct AuditTests {
    static let server = LazyServer("audit")

    struct History {
        var session: String
        var marker: String
        var started: Date
    }

    /// Create a marker, move it (bob), write its details, lock and unlock the session, delete it.
    func scriptedHistory(_ client: HTTPClient) async throws -> History {
        let started = Date().addingTimeInterval(-1)
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let marker = try await fixtures.marker(in: session, ["label": "valve"])
        let id = Fixtures.id(marker)
        let moved = try await client.patch(
            "/api/v1/markers/\(id)", ["label": "valve 2", "p1": [0, 0, 0]],
            headers: ["X-User-Id": "bob", "User-Agent": "Roboscope-iOS/3.1"])
        #expect(moved.status == 200)
        #expect(try await client.put("/api/v1/markers/\(id)/details", ["custom_props": ["torque": 12]]).status == 200)
        let locks = "/api/v1/locks/\(Fixtures.id(session))"
        let lock = try await client.post(locks, ["ttl_seconds": 30], headers: ["X-User-Id": "lena"])
        _ = try await client.send("DELETE", locks, json: ["token": lock.json["token"]!], headers: ["X-User-Id": "lena"])
        #expect(try await client.delete("/api/v1/markers/\(id)", headers: ["X-User-Id": "carl"]).status == 204)
        return History(session: Fixtures.id(session), marker: id, started: started)
    }

    @Test func aMarkersHistoryShowsWhoChangedWhatAndHow() async throws {
        let (server, _) = try await Self.server.get()
        let history = try await scriptedHistory(server.client)
        let reply = try await server.client.get("/api/v1/markers/\(history.marker)/history")
        #expect(reply.status == 200)
        let entries = reply.json["data"]?.array ?? []
        #expect(entries.map { $0["type"]?.string ?? "" } == ["marker.created", "marker.updated", "marker.deleted"])
        #expect(entries.map { $0["version"]?.int ?? 0 } == [1, 2, 3])
        let created = entries[0]
        #expect(created["changes"]?["label"] == ["before": .null, "after": "valve"])
        #expect(created["changes"]?["color"] == nil)
        let moved = entries[1]
        #expect(moved["actor"] == "bob")
        #expect(moved["client"]?["user_agent"] == "Roboscope-iOS/3.1")
        #expect(moved["client"]?["address"] == "127.0.0.1")
        #expect(moved["changes"]?["label"] == ["before": "valve", "after": "valve 2"])
        #expect(moved["changes"]?["p1"] == ["before": [0, 0, 1], "after": [0, 0, 0]])
        #expect(Set(moved["changes"]?.objectValue?.keys ?? [:].keys) == ["label", "p1"])
        #expect(isWireTimestamp(moved["recorded_at"]))
        let deleted = entries[2]
        #expect(deleted["actor"] == "carl")
        #expect(deleted["changes"]?["label"] == ["before": "valve 2", "after": .null])
        #expect(reply.json["next_after"] == .null)
    }

    @Test func theSessionsTrailHasLocksDetailsAndPagesWithoutGaps() async throws {
        let (server, _) = try await Self.server.get()
        let history = try await scriptedHistory(server.client)
        let all = try await server.client.get("/api/v1/audit?work_session_id=\(history.session)&limit=1000")
        let types = all.json["data"]?.array?.map { $0["type"]?.string ?? "" } ?? []
        #expect(types.contains("work_session.lock_acquired"))
        #expect(types.contains("work_session.lock_released"))
        #expect(types.contains("marker_details.updated"))
        #expect(types.first == "work_session.created")

        var paged: [Int64] = []
        var after: Int64 = 0
        while true {
            let page = try await server.client.get(
                "/api/v1/audit?work_session_id=\(history.session)&limit=3&after=\(after)")
            paged += page.json["data"]?.array?.map { $0["position"]?.int ?? 0 } ?? []
            guard let next = page.json["next_after"]?.int else { break }
            after = next
        }
        #expect(paged == all.json["data"]?.array?.map { $0["position"]?.int ?? 0 })

        let bob = try await server.client.get("/api/v1/audit?work_session_id=\(history.session)&actor=bob")
        #expect(
            bob.json["data"]?.array?.map { $0["type"]?.string ?? "" } == [
                "marker.updated", "marker_details.calculated",
            ])
        let locks = try await server.client.get(
            "/api/v1/audit?work_session_id=\(history.session)&entity_type=work_session_lock")
        #expect(locks.json["data"]?.array?.count == 2)
        let future = try await server.client.get(
            "/api/v1/audit?work_session_id=\(history.session)&from=2100-01-01T00:00:00Z")
        #expect(future.json["data"] == [])
        let window = ISO8601DateFormatter().string(from: history.started)
        let since = try await server.client.get(
            "/api/v1/audit?work_session_id=\(history.session)&from=\(window)&type=marker.deleted")
        #expect(since.json["data"]?.array?.count == 1)
    }

    @Test(arguments: [
        ("entity_type=gadget", "entity_type"), ("type=marker.exploded", "type"), ("limit=1001", "limit"),
        ("limit=0", "limit"), ("after=-1", "after"), ("from=yesterday", "from"), ("to=2026-13-01T00:00:00Z", "to"),
        ("from=2026-11-22T10:00:00Z&to=2026-11-22T09:00:00Z", "from"), ("space_id=42", "space_id"),
        ("work_session_id=x", "work_session_id"), ("entity_id=x", "entity_id"),
    ])
    func badFiltersAre400NamingTheParameter(query: String, field: String) async throws {
        let (server, _) = try await Self.server.get()
        let reply = try await server.client.get("/api/v1/audit?\(query)")
        #expect(reply.status == 400)
        #expect(reply.json["error"]?["field"]?.string == field)
    }

    @Test func historyOfAnUnknownEntityIs404() async throws {
        let (server, _) = try await Self.server.get()
        #expect(try await server.client.get("/api/v1/spaces/\(EntityID.random())/history").status == 404)
        #expect(try await server.client.get("/api/v1/markers/nope/history").status == 422)
    }

    /// Every filter, as a tenant's reader sends it, is served by an index; issue 45: the
    /// unfiltered page and the actor, type and time filters by indexes that start with the
    /// tenant, so that a tenant's audit page never walks every tenant's events.
    @Test func everyFilterCanBeServedByAnIndex() async throws {
        let (_, url) = try await Self.server.get()
        let connection = try TestDatabase.connect(url)
        // The test log is small enough that a scan would win; forbid it to see the index the filter can use.
        try connection.query("SET enable_seqscan = off")
        var filters: [(String, AuditQuery)] = []
        func add(_ name: String, _ change: (inout AuditQuery) -> Void) {
            var query = AuditQuery()
            query.visible = Visibility(tenant: "acme")
            change(&query)
            filters.append((name, query))
        }
        add("none") { _ in }
        add("newest first") { $0.descending = true }
        add("space_id") { $0.spaceID = .random() }
        add("work_session_id") { $0.workSessionID = .random() }
        add("entity") {
            $0.entityType = .marker; $0.entityID = .random()
        }
        add("actor") { $0.actor = "bob" }
        add("type") { $0.type = "marker.updated" }
        add("from/to") {
            $0.from = Timestamp(rfc3339: "2026-11-22T00:00:00Z"); $0.to = Timestamp(rfc3339: "2026-11-23T00:00:00Z")
        }
        add("spaces claim") { $0.visible = Visibility(tenant: "acme", spaces: [.random()]) }
        let expected: [String: [String]] = [
            "none": ["events_tenant_idx"], "newest first": ["events_tenant_idx"],
            "space_id": ["events_space_idx", "events_tenant_idx"],
            "work_session_id": ["events_work_session_idx", "events_tenant_idx"],
            "entity": ["events_stream_version_key"],
            // On a log this small the planner may prefer the tenant's position index.
            "actor": ["events_tenant_actor_idx", "events_tenant_idx"],
            "type": ["events_tenant_type_idx", "events_tenant_idx"],
            "from/to": ["events_tenant_recorded_at_idx", "events_tenant_idx"],
            "spaces claim": ["events_space_idx", "events_tenant_idx"],
        ]
        for (name, query) in filters {
            let plan = try AuditReader.explain(query, on: connection)
            #expect(expected[name]!.contains { plan.contains($0) }, "\(name): \(plan)")
            #expect(!plan.contains("events_pkey"), "\(name) walks the whole log by position: \(plan)")
        }
    }

    /// Markers by place: `bbox` and `near`, in a space or a work session, come from the
    /// place index (a GiST over space and centre), never a scan of every marker.
    @Test func markersByPlaceAreServedByThePlaceIndex() async throws {
        let (_, url) = try await Self.server.get()
        let plans = try await onOwnThread { () throws -> [String: String] in
            let connection = try TestDatabase.connect(url)
            try connection.query("SET enable_seqscan = off")
            let filters: [String: MarkerFilter] = [
                "bbox in a space": MarkerFilter(
                    scope: .space(.random()), place: .box(minX: 0, minZ: 0, maxX: 5, maxZ: 5)),
                "bbox in a session": MarkerFilter(
                    scope: .workSession(.random()), place: .box(minX: 0, minZ: 0, maxX: 5, maxZ: 5)),
                "near in a space": MarkerFilter(scope: .space(.random()), place: .near(x: 1, z: 1, range: 3)),
            ]
            return try filters.mapValues { try ReadModels.explainMarkers($0, on: connection) }
        }
        for (name, plan) in plans {
            #expect(plan.contains("markers_place_idx"), "\(name): \(plan)")
        }
    }

    @Test func theRequestIdInTheResponseIsTheOneInTheEvents() async throws {
        let (server, _) = try await Self.server.get()
        // No X-Request-Id from the client: the server makes one, answers with it, and logs it.
        let created = try await server.client.post(
            "/api/v1/spaces", ["key": .string(Fixtures.uniqueKey()), "name": "n"])
        let header = created.header("X-Request-Id")
        #expect(header != nil)
        let history = try await server.client.get("/api/v1/spaces/\(Fixtures.id(created.json))/history")
        #expect(history.json["data"]?[0]?["request_id"]?.string == header)
    }
}
