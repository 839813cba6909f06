import Foundation
import Testing
import RoboscopeDomain
import RoboscopePostgres
#if canImport(Glibc)
import Glibc
#endif

/// `Idempotency-Key` on writes (docs/sync.md): one change per key, the stored answer
/// given again, across restarts and instances.
@Suite struct IdempotencyTests {
    static let server = LazyServer("idempotency")

    func setup() async throws -> (ServerProcess, String, Fixtures, session: JSONValue) {
        let (server, url) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        return (server, url, fixtures, try await fixtures.session(in: try await fixtures.space()))
    }

    static func markerBody(_ session: JSONValue, label: String = "valve") -> JSONValue {
        var body = Fixtures.markerFields(in: session)
        body["label"] = .string(label)
        return .object(body)
    }

    /// `POST /markers` of a marker in `session` under the `Idempotency-Key` `key`.
    static func createMarker(
        on server: ServerProcess, in session: JSONValue, key: String
    ) async throws -> HTTPClient.Reply {
        try await server.client.post("/api/v1/markers", markerBody(session), headers: ["Idempotency-Key": key])
    }

    /// The events of one work session's topic (tests share the server).
    static func events(_ url: String, _ session: JSONValue) throws -> Int64 {
        try scalar(url, "SELECT count(*) FROM eventlog.events WHERE work_session_id = $1::uuid", [Fixtures.id(session)])
    }

    @Test func aRetryGetsTheStoredAnswerAndAppendsNothing() async throws {
        let (server, url, _, session) = try await setup()
        let key = UUID().uuidString
        let first = try await Self.createMarker(on: server, in: session, key: key)
        #expect(first.status == 201)
        #expect(first.header("Idempotent-Replayed") == nil)
        let count = try Self.events(url, session)
        let again = try await server.client.post(
            "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key])
        #expect(again.status == 201)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.body == first.body, "byte for byte")
        #expect(try Self.events(url, session) == count)
        let markers = try await server.client.get("/api/v1/markers?work_session_id=\(Fixtures.id(session))")
        #expect(markers.json.count == 1)

        // Every kind of write: a patch, a details put, a delete (204, empty body).
        let path = "/api/v1/markers/\(Fixtures.id(first.json))"
        for _ in 0..<2 {
            let patched = try await server.client.patch(
                path, ["label": "pump"], headers: ["Idempotency-Key": key + "-patch"])
            #expect(patched.status == 200)
            #expect(patched.json["version"] == 2)
        }
        for attempt in 0..<2 {
            let deleted = try await server.client.delete(path, headers: ["Idempotency-Key": key + "-delete"])
            #expect(deleted.status == 204)
            #expect(deleted.header("Idempotent-Replayed") == (attempt == 0 ? nil : "true"))
        }
    }

    @Test func theSameKeyForAnotherRequestIsRefused() async throws {
        let (server, url, _, session) = try await setup()
        let key = UUID().uuidString
        #expect(try await Self.createMarker(on: server, in: session, key: key).status == 201)
        let count = try Self.events(url, session)
        let other = try await server.client.post(
            "/api/v1/markers", Self.markerBody(session, label: "other"), headers: ["Idempotency-Key": key]
        )
        #expect(other.status == 422)
        #expect(other.json["error"]?["code"] == "idempotency_key_reused")
        #expect(other.json["error"]?["field"] == "Idempotency-Key")
        #expect(try Self.events(url, session) == count)
    }

    @Test func theSameKeyForAnInvalidRequestIsRefusedAsReused() async throws {
        let (server, _, _, session) = try await setup()
        let key = UUID().uuidString
        #expect(try await Self.createMarker(on: server, in: session, key: key).status == 201)
        let bad = JSONValue.object(Self.markerBody(session).objectValue!.merging(["p1": [0, 0]]) { $1 })
        let other = try await server.client.post("/api/v1/markers", bad, headers: ["Idempotency-Key": key])
        #expect(other.status == 422)
        #expect(other.json["error"]?["code"] == "idempotency_key_reused", "the key, not the body, is what is wrong")
    }

    /// A retry whose write would now change nothing still gets the stored answer, not
    /// the entity as it is now.
    @Test func aRetryThatWouldNowChangeNothingGetsTheStoredAnswer() async throws {
        let (server, _, fixtures, session) = try await setup()
        let marker = try await fixtures.marker(in: session)
        let path = "/api/v1/markers/\(Fixtures.id(marker))"
        let key = UUID().uuidString
        let first = try await server.client.patch(path, ["label": "pump"], headers: ["Idempotency-Key": key])
        #expect(first.status == 200)
        #expect(try await server.client.patch(path, ["color": "#00FF00"]).status == 200)
        let again = try await server.client.patch(path, ["label": "pump"], headers: ["Idempotency-Key": key])
        #expect(again.status == 200)
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.body == first.body)
    }

    /// A retry of a create whose work session was deleted since, on an instance that never
    /// saw the session: the stored answer, not the refusal a new create would get.
    @Test func aRetriedCreateIntoASessionDeletedSinceGetsTheStoredAnswer() async throws {
        let (server, url, _, session) = try await setup()
        let key = UUID().uuidString
        let first = try await Self.createMarker(on: server, in: session, key: key)
        #expect(first.status == 201)
        #expect(try await server.client.delete("/api/v1/work-sessions/\(Fixtures.id(session))").status == 204)
        let other = try await ServerProcess(databaseURL: url)
        defer { other.stopWithoutWaiting() }
        for client in [server.client, other.client] {
            let again = try await client.post(
                "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key])
            #expect(again.status == 201)
            #expect(again.header("Idempotent-Replayed") == "true")
            #expect(again.body == first.body)
        }
        let fresh = try await other.client.post(
            "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key + "-new"])
        #expect(fresh.status == 422)
    }

    @Test func keysBelongToTheirActor() async throws {
        let (server, _, _, session) = try await setup()
        let key = UUID().uuidString
        let ana = try await server.client.post(
            "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key, "X-User-Id": "ana"]
        )
        let ben = try await server.client.post(
            "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key, "X-User-Id": "ben"]
        )
        #expect(ana.status == 201)
        #expect(ben.status == 201)
        #expect(ben.header("Idempotent-Replayed") == nil)
        #expect(ana.json["id"] != ben.json["id"])
    }

    @Test func aRefusedRequestStoresNothing() async throws {
        let (server, _, _, session) = try await setup()
        let key = UUID().uuidString
        var bad = Self.markerBody(session)
        bad = .object(bad.objectValue!.merging(["p1": [0, 0]]) { $1 })
        let refused = try await server.client.post("/api/v1/markers", bad, headers: ["Idempotency-Key": key])
        #expect(refused.status == 422)
        let fixed = try await server.client.post(
            "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key])
        #expect(fixed.status == 201)
        #expect(fixed.header("Idempotent-Replayed") == nil)
    }

    @Test func malformedKeysAreRefusedNamingTheHeader() async throws {
        let (server, url, _, session) = try await setup()
        let count = try Self.events(url, session)
        for key in ["", String(repeating: "k", count: 300), "with space", "caf\u{e9}"] {
            let reply = try await server.client.post(
                "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key])
            #expect(reply.status == 400, "key \(key.prefix(20))")
            #expect(reply.json["error"]?["field"] == "Idempotency-Key")
        }
        #expect(try Self.events(url, session) == count)
        let longest = String(repeating: "k", count: 255)
        #expect(
            try await server.client.post(
                "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": longest]
            ).status == 201)
    }

    @Test func tenConcurrentRequestsWithOneKeyApplyOnce() async throws {
        let (server, _, _, session) = try await setup()
        let key = UUID().uuidString
        let replies = try await withThrowingTaskGroup(of: HTTPClient.Reply.self) { group in
            for _ in 0..<10 {
                group.addTask {
                    try await server.client.post(
                        "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key])
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let created = replies.filter { $0.status == 201 }
        let running = replies.filter { $0.status == 409 }
        #expect(created.count + running.count == 10, "\(replies.map(\.status))")
        #expect(Set(created.map(\.body)).count == 1, "every 201 is the one answer")
        #expect(created.filter { $0.header("Idempotent-Replayed") == nil }.count == 1)
        for reply in running {
            #expect(reply.json["error"]?["code"] == "idempotency_key_in_progress")
            #expect(reply.header("Retry-After") != nil)
        }
        let markers = try await server.client.get("/api/v1/markers?work_session_id=\(Fixtures.id(session))")
        #expect(markers.json.count == 1)
    }

    @Test func eventsCarryTheKeyAsClientMutationID() async throws {
        let (server, _, _, session) = try await setup()
        let topic = "work_session:\(Fixtures.id(session))"
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "subscribe", "topic": .string(topic)])
        _ = try await socket.next(op: "subscribed")
        let key = UUID().uuidString
        let marker = try await server.client.post(
            "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key])
        let live = try await socket.nextEvent(streamType: "marker")
        #expect(live["client_mutation_id"]?.string == key)
        let details = try await socket.next(op: "event")
        #expect(details["client_mutation_id"]?.string == key, "every event the request caused")

        let feed = try await server.client.get("/api/v1/changes?topic=\(topic)&since=0")
        let fromFeed = feed.json["data"]?.array?.first {
            $0["stream_id"] == marker.json["id"] && $0["type"] == "marker.created"
        }
        #expect(fromFeed == live, "the feed lists the message the gateway sent")

        let audit = try await server.client.get("/api/v1/audit?work_session_id=\(Fixtures.id(session))")
        let entries = audit.json["data"]?.array ?? []
        #expect(entries.contains { $0["client_mutation_id"]?.string == key })
        #expect(entries.contains { $0["client_mutation_id"] == .null }, "the session's creation had no key")
    }

    @Test func aRetriedLockAcquireReturnsTheSameToken() async throws {
        let (server, _, _, session) = try await setup()
        let path = "/api/v1/locks/\(Fixtures.id(session))"
        let key = UUID().uuidString
        let first = try await server.client.post(path, ["ttl_seconds": 30], headers: ["Idempotency-Key": key])
        #expect(first.json["acquired"] == true)
        let again = try await server.client.post(path, ["ttl_seconds": 30], headers: ["Idempotency-Key": key])
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.json["token"] == first.json["token"])
        #expect(again.json["fencing_token"] == first.json["fencing_token"])
        // Another client's acquire is refused while it is held.
        #expect(try await server.client.post(path, ["ttl_seconds": 30]).json["acquired"] == false)

        let token = first.json["token"]!
        for _ in 0..<2 {
            let extended = try await server.client.post(
                path + "/extend", ["token": token, "ttl_seconds": 30], headers: ["Idempotency-Key": key + "-x"])
            #expect(extended.json["extended"] == true)
        }
        for _ in 0..<2 {
            let released = try await server.client.send(
                "DELETE", path, json: ["token": token], headers: ["Idempotency-Key": key + "-r"])
            #expect(released.json["released"] == true, "the retry is told what the release did")
        }
    }

    @Test func theAnswerSurvivesTheServer() async throws {
        // A second instance on the same database gives the first one's answer.
        let (server, url, _, session) = try await setup()
        let key = UUID().uuidString
        let first = try await Self.createMarker(on: server, in: session, key: key)
        let other = try await ServerProcess(databaseURL: url)
        defer { other.stopWithoutWaiting() }
        let again = try await other.client.post(
            "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key])
        #expect(again.header("Idempotent-Replayed") == "true")
        #expect(again.body == first.body)
    }

    /// The process dies (SIGKILL) after the commit, before the client read an answer; the
    /// retry after the restart gets the original answer and one marker exists.
    @Test func aRetryAfterACrashGetsTheOriginalAnswer() async throws {
        let url = try await TestDatabase.fresh("idempotency_crash")
        let server = try await ServerProcess(databaseURL: url)
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let key = UUID().uuidString
        let body = String(decoding: Self.markerBody(session).jsonBytes(.wire), as: UTF8.self)
        // A client that sends and never reads: whatever the server answers is lost.
        let socket = try WebSocketClient.connect(port: server.port)
        defer { close(socket) }
        let request =
            "POST /api/v1/markers HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Idempotency-Key: \(key)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        _ = Array(request.utf8).withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        try await eventually("the marker is committed") { try scalar(url, "SELECT count(*) FROM markers") == 1 }
        kill(server.process.processIdentifier, SIGKILL)
        _ = await server.process.exitStatus()

        let restarted = try await ServerProcess(databaseURL: url)
        defer { restarted.stopWithoutWaiting() }
        let retry = try await restarted.client.post(
            "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key])
        #expect(retry.status == 201)
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(try scalar(url, "SELECT count(*) FROM markers") == 1)
        #expect(retry.json["id"]?.string == (try scalarText(url, "SELECT id::text FROM markers")))
    }

    @Test func keysArePurgedAfterTheirRetention() async throws {
        let url = try await TestDatabase.fresh("idempotency_purge")
        // Long enough to see the key stored on a loaded machine; the purge runs every 2 s.
        let server = try await ServerProcess(databaseURL: url, extraArguments: ["--idempotency-retention", "5"])
        defer { server.stopWithoutWaiting() }
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let key = UUID().uuidString
        let sent = ContinuousClock.now
        #expect(try await Self.createMarker(on: server, in: session, key: key).status == 201)
        // Stored, unless the machine was so loaded that its retention had already passed.
        let stored = try scalar(url, "SELECT count(*) FROM idempotency_keys")
        #expect(stored == 1 || ContinuousClock.now - sent >= .seconds(5), "\(stored) keys")
        try await eventually("the key is purged", within: 30) {
            try scalar(url, "SELECT count(*) FROM idempotency_keys") == 0
        }
        // Afterwards the key is new again.
        let again = try await server.client.post(
            "/api/v1/markers", Self.markerBody(session), headers: ["Idempotency-Key": key])
        #expect(again.status == 201)
        #expect(again.header("Idempotent-Replayed") == nil)
    }
}
