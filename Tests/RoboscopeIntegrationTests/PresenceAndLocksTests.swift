import Foundation
import Testing
import RoboscopeDomain
import RoboscopePostgres

/// Presence and locks against the real Redis, through a server of their own with a
/// eight-second presence window (two, then four seconds expired users in the middle of a test when
/// the machine was busy with other suites).
@Suite(.serialized) struct PresenceAndLocksTests {
    static let server = LazyServer("redis") { ["--presence-window", "8"] }

    func setup() async throws -> (HTTPClient, JSONValue, String) {
        let (server, url) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        return (server.client, try await fixtures.session(in: try await fixtures.space()), url)
    }

    @Test func presenceJoinsListsLeavesAndExpires() async throws {
        let (client, session, _) = try await setup()
        let path = "/api/v1/presence/\(Fixtures.id(session))"
        let clock = ContinuousClock()
        let anaJoined = clock.now
        let first = try await client.post(path, ["user_id": "ana"])
        #expect(first.status == 200)
        #expect(first.json["joined"] == true)
        #expect(try await client.post(path, ["user_id": "ana"]).json["joined"] == false)
        let benJoined = clock.now
        _ = try await client.post(path, ["user_id": "ben"])
        // On a loaded machine the 8 s window can pass before a read: the reads below
        // expect a user only when they started inside that user's window.
        let readStarted = clock.now
        let both = Set(try await client.get(path).json["users"]?.array ?? [])
        #expect(both == ["ana", "ben"] || readStarted - anaJoined >= .seconds(8))
        let left = try await client.delete(path + "/ana")
        #expect(left.json["left"] == true || clock.now - anaJoined >= .seconds(8))
        let secondRead = clock.now
        let remaining = try await client.get(path).json["users"]
        #expect(remaining == ["ben"] || (remaining == [] && secondRead - benJoined >= .seconds(8)))
        try await eventually("ben's presence expires", within: 30) { try await client.get(path).json["users"] == [] }
    }

    @Test func joinsAndLeavesArePublished() async throws {
        let (client, session, _) = try await setup()
        let channel = "roboscope:presence:\(Fixtures.id(session)):events"
        let redis = URLComponents(string: ServerProcess.redisURL)!
        let subscriber = Process()
        subscriber.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        subscriber.arguments = [
            "-h", redis.host ?? "127.0.0.1", "-p", String(redis.port ?? 6379), "SUBSCRIBE", channel,
        ]
        let output = Pipe()
        subscriber.standardOutput = output
        let received = ReceivedText()
        output.fileHandleForReading.readabilityHandler = { handle in received.append(handle.availableData) }
        try subscriber.run()
        ChildProcesses.register(subscriber.processIdentifier)
        // redis-cli confirms its subscription on its output.
        try await eventually("redis-cli subscribed") { received.text.contains(channel) }
        let path = "/api/v1/presence/\(Fixtures.id(session))"
        _ = try await client.post(path, ["user_id": "cleo"])
        _ = try await client.post(path, ["user_id": "dan"])
        _ = try await client.post(path, ["user_id": "cleo"])
        _ = try await client.delete(path + "/cleo")
        // Listing notices dan's expiry (and publishes it) once the window has passed.
        try await eventually("dan's presence expires", within: 30) { try await client.get(path).json["users"] == [] }
        let lines = { received.text.split(separator: "\n").filter { $0.hasPrefix("{") }.map(String.init) }
        try await eventually("four presence events published") { lines().count >= 4 }
        // redis-cli keeps reading a subscription through SIGTERM.
        kill(subscriber.processIdentifier, SIGKILL)
        _ = await subscriber.exitStatus()
        output.fileHandleForReading.readabilityHandler = nil
        let events = lines()
        #expect(events.count == 4, "\(events)")
        #expect(events.first?.contains("\"join\"") == true && events.first?.contains("cleo") == true)
        #expect(events.contains { $0.contains("\"leave\"") && $0.contains("cleo") && $0.contains("left") })
        #expect(events.contains { $0.contains("\"leave\"") && $0.contains("dan") && $0.contains("expired") })
    }

    @Test func presenceValidation() async throws {
        let (client, session, _) = try await setup()
        let path = "/api/v1/presence/\(Fixtures.id(session))"
        #expect(try await client.post(path, [:]).json["error"]?["field"] == "user_id")
        #expect(try await client.post(path, ["user_id": ""]).status == 422)
        #expect(try await client.post(path, ["user_id": .string(String(repeating: "u", count: 201))]).status == 422)
        let badSession = try await client.post("/api/v1/presence/not-a-uuid", ["user_id": "ana"])
        #expect(badSession.status == 422)
        #expect(badSession.json["error"]?["field"] == "work_session_id")
    }

    @Test func racingAcquirersExactlyOneWins() async throws {
        let (client, session, url) = try await setup()
        let path = "/api/v1/locks/\(Fixtures.id(session))"
        let replies = try await withThrowingTaskGroup(of: HTTPClient.Reply.self) { group in
            for index in 0..<8 {
                group.addTask {
                    try await client.post(path, ["ttl_seconds": 30], headers: ["X-User-Id": "tech-\(index)"])
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let winners = replies.filter { $0.json["acquired"] == true }
        try #require(winners.count == 1)
        let winner = winners[0].json
        #expect(winner["token"]?.string?.count == 32)
        #expect(winner["fencing_token"]?.int != nil)
        for loser in replies where loser.json["acquired"] == false {
            #expect(loser.json["token"] == .null)
            #expect(loser.json["holder"]?.string?.hasPrefix("tech-") == true)
        }
        let state = try await client.get(path).json
        #expect(state["locked"] == true)
        #expect(isWireTimestamp(state["expires_at"]))
        #expect(state["fencing_token"] == winner["fencing_token"])

        let token = winner["token"]!
        #expect(
            try await client.post(path + "/extend", ["token": "0123456789abcdef0123456789abcdef", "ttl_seconds": 30])
                .json["extended"] == false)
        #expect(try await client.post(path + "/extend", ["token": token, "ttl_seconds": 60]).json["extended"] == true)
        #expect(
            try await client.send("DELETE", path, json: ["token": "0123456789abcdef0123456789abcdef"]).json["released"]
                == false)
        #expect(try await client.send("DELETE", path, json: ["token": token]).json["released"] == true)
        #expect(try await client.get(path).json["locked"] == false)

        let again = try await client.post(path, ["ttl_seconds": 5]).json
        #expect(again["acquired"] == true)
        #expect((again["fencing_token"]?.int ?? 0) > (winner["fencing_token"]?.int ?? 0))

        // Audit: acquire, extend and release are in the log; the session's version is untouched.
        let connection = try TestDatabase.connect(url)
        let audit = try connection.query(
            """
            SELECT type, metadata->>'actor' FROM eventlog.events WHERE stream_type = 'work_session_lock' AND \
            stream_id = $1 ORDER BY position
            """,
            [Fixtures.id(session)]
        )
        #expect(
            (0..<audit.rowCount).map { audit.string($0, 0)! } == [
                "work_session.lock_acquired", "work_session.lock_extended", "work_session.lock_released",
                "work_session.lock_acquired",
            ])
        #expect(audit.string(0, 1)?.hasPrefix("tech-") == true)
        #expect(try await client.get("/api/v1/work-sessions/\(Fixtures.id(session))").json["version"] == 1)
    }

    @Test func expiredLockGoesToTheNextWithAHigherFencingToken() async throws {
        let (client, session, _) = try await setup()
        let path = "/api/v1/locks/\(Fixtures.id(session))"
        let granted = ContinuousClock.now
        let first = try await client.post(path, ["ttl_seconds": 2]).json
        #expect(first["acquired"] == true)
        let refused = try await client.post(path, ["ttl_seconds": 1]).json["acquired"]
        // Only meaningful while the first lease surely runs: a loaded machine may take
        // longer than the lease between two requests.
        if ContinuousClock.now - granted < .milliseconds(1500) { #expect(refused == false) }
        try await eventually("the lock expires") { try await client.get(path).json["locked"] == false }
        let second = try await client.post(path, ["ttl_seconds": 10]).json
        #expect(second["acquired"] == true)
        #expect((second["fencing_token"]?.int ?? 0) > (first["fencing_token"]?.int ?? 0))
        #expect(
            try await client.post(path + "/extend", ["token": first["token"]!, "ttl_seconds": 10]).json["extended"]
                == false)
        #expect(try await client.send("DELETE", path, json: ["token": first["token"]!]).json["released"] == false)
    }

    @Test func lockValidation() async throws {
        let (client, session, _) = try await setup()
        let path = "/api/v1/locks/\(Fixtures.id(session))"
        for ttl: JSONValue in [0, 3601, "ten", -5] {
            let reply = try await client.post(path, ["ttl_seconds": ttl])
            #expect(reply.status == 422, "\(ttl)")
            #expect(reply.json["error"]?["field"] == "ttl_seconds")
        }
        #expect(try await client.send("DELETE", path, json: [:]).json["error"]?["field"] == "token")
        #expect(try await client.post(path + "/extend", ["ttl_seconds": 5]).json["error"]?["field"] == "token")
        #expect(try await client.post("/api/v1/locks/\(EntityID.random())", ["ttl_seconds": 5]).status == 404)
        #expect(try await client.get("/api/v1/locks/nope").status == 422)
    }
}

/// Enforced locks: writes to the session and its markers need the holder's token.
@Suite(.serialized) struct EnforcedLockTests {
    func setup() async throws -> (HTTPClient, JSONValue, JSONValue) {
        let (server, _) = try await PresenceAndLocksTests.server.get()
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        return (server.client, session, try await fixtures.marker(in: session))
    }

    @Test func enforcedLockRefusesWritesWithoutTheHoldersToken() async throws {
        let (client, session, marker) = try await setup()
        let lock = try await client.post(
            "/api/v1/locks/\(Fixtures.id(session))", ["ttl_seconds": 30, "enforce": true],
            headers: ["X-User-Id": "holder-1"]
        ).json
        let token = try #require(lock["token"]?.string)
        let body = Fixtures.markerFields(in: session)
        let markerPath = "/api/v1/markers/\(Fixtures.id(marker))"
        let refused = try await client.post("/api/v1/markers", .object(body))
        #expect(refused.status == 423)
        #expect(refused.json["error"]?["code"] == "locked")
        #expect(refused.json["error"]?["holder"] == "holder-1")
        #expect(try await client.patch(markerPath, ["label": "x"]).status == 423)
        #expect(
            try await client.patch(markerPath, ["label": "x"], headers: ["X-Lock-Token": "not-the-token"]).status == 423
        )
        #expect(
            try await client.patch("/api/v1/work-sessions/\(Fixtures.id(session))", ["status": "active"]).status == 423)
        #expect(try await client.send("POST", markerPath + "/details/calculate").status == 423)
        #expect(try await client.delete(markerPath).status == 423)
        #expect(try await client.post("/api/v1/markers/bulk", ["markers": [.object(body)]]).status == 423)

        #expect(try await client.post("/api/v1/markers", .object(body), headers: ["X-Lock-Token": token]).status == 201)
        #expect(try await client.patch(markerPath, ["label": "mine"], headers: ["X-Lock-Token": token]).status == 200)
        // Extending keeps enforcing; releasing ends it.
        #expect(
            try await client.post(
                "/api/v1/locks/\(Fixtures.id(session))/extend", ["token": .string(token), "ttl_seconds": 60]
            ).json["extended"] == true)
        #expect(try await client.patch(markerPath, ["label": "x"]).status == 423)
        #expect(
            try await client.send("DELETE", "/api/v1/locks/\(Fixtures.id(session))", json: ["token": .string(token)])
                .json["released"] == true)
        #expect(try await client.patch(markerPath, ["label": "free"]).status == 200)
    }

    @Test func advisoryLockChangesNothingForClientsWithoutAToken() async throws {
        let (client, session, marker) = try await setup()
        let lock = try await client.post("/api/v1/locks/\(Fixtures.id(session))", ["ttl_seconds": 30]).json
        #expect(lock["acquired"] == true)
        #expect(lock["enforce"] == false)
        #expect(try await client.patch("/api/v1/markers/\(Fixtures.id(marker))", ["label": "x"]).status == 200)
    }

    @Test func lateWriteWithAnExpiredHoldersTokenIsRefused() async throws {
        let (client, session, marker) = try await setup()
        let path = "/api/v1/locks/\(Fixtures.id(session))"
        let first = try await client.post(path, ["ttl_seconds": 1, "enforce": true], headers: ["X-User-Id": "first"])
            .json
        let firstToken = try #require(first["token"]?.string)
        try await eventually("the lock expires") { try await client.get(path).json["locked"] == false }
        let second = try await client.post(
            path, ["ttl_seconds": 30, "enforce": true], headers: ["X-User-Id": "second"]
        ).json
        let secondToken = try #require(second["token"]?.string)
        #expect((second["fencing_token"]?.int ?? 0) > (first["fencing_token"]?.int ?? 0))
        let late = try await client.patch(
            "/api/v1/markers/\(Fixtures.id(marker))", ["label": "late"], headers: ["X-Lock-Token": firstToken])
        #expect(late.status == 423)
        #expect(late.json["error"]?["holder"] == "second")
        #expect(late.json["error"]?["fencing_token"] == second["fencing_token"])
        let current = try await client.patch(
            "/api/v1/markers/\(Fixtures.id(marker))", ["label": "now"], headers: ["X-Lock-Token": secondToken])
        #expect(current.status == 200)
    }
}

/// Redis goes away under a running service and comes back.
@Suite(.serialized) struct RedisOutageTests {
    @Test func presenceAndLocksAnswer503ThenRecover() async throws {
        let redis = URLComponents(string: ServerProcess.redisURL)!
        let proxy = try TCPProxy(to: (redis.host ?? "127.0.0.1", redis.port ?? 6379))
        try proxy.start()
        var viaProxy = redis
        viaProxy.port = proxy.port
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("redisoutage"), redisURL: viaProxy.string!)
        let client = server.client
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let presence = "/api/v1/presence/\(Fixtures.id(session))"
        #expect(try await client.post(presence, ["user_id": "ana"]).status == 200)

        proxy.stop()
        for _ in 0..<3 {
            let started = Date()
            let reply = try await client.get(presence)
            #expect(reply.status == 503)
            #expect(reply.header("Retry-After") == "1")
            // Fails fast rather than waiting on Redis: well under the HTTP client's 30 s
            // timeout even on a loaded machine (1.5 s, then 5 s, were exceeded by busy CI runs).
            #expect(Date().timeIntervalSince(started) < 10)
        }
        #expect(try await client.post("/api/v1/locks/\(Fixtures.id(session))", ["ttl_seconds": 5]).status == 503)
        // Everything that does not need Redis keeps working.
        _ = try await fixtures.marker(in: session)

        try proxy.start()
        var recovered = false
        for _ in 0..<50 where !recovered {
            recovered = try await client.get(presence).status == 200
            if !recovered { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(recovered)
        let acquired = try await client.post("/api/v1/locks/\(Fixtures.id(session))", ["ttl_seconds": 5])
        #expect(acquired.json["acquired"] == true, "\(acquired.status) \(acquired.json)")
        _ = await server.terminate()
        proxy.stop()
    }
}

/// Text a child process writes, collected as it arrives.
final class ReceivedText: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    func append(_ chunk: Data) { lock.withLock { data.append(chunk) } }
    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
}
