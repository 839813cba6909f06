import Foundation
import RoboscopeDomain
import Testing
import WebSocketCodec

/// Presence a client cannot inflate: a cap per connection, a cap per session, one user
/// per connection and session with authentication on, only existing sessions, and joins
/// and leaves instead of ever bigger lists (docs/websocket.md "Presence over WebSocket").
@Suite struct PresenceSpamTests {
    static let server = LazyServer("presence_spam") {
        ["--ws-max-presence", "2", "--presence-max-users", "3", "--ws-op-rate", "1000"]
    }

    func session(_ server: ServerProcess) async throws -> String {
        let fixtures = Fixtures(client: server.client)
        return Fixtures.id(try await fixtures.session(in: try await fixtures.space()))
    }

    @Test func aConnectionHoldsAtMostItsCapOfPresences() async throws {
        let server = try await Self.server.get().server
        let sessions = [try await session(server), try await session(server), try await session(server)]
        let socket = try WebSocketClient(port: server.wsPort)
        // 150 users in one write, as the review's probe did: two are held, the rest refused.
        var burst: [UInt8] = []
        for index in 0..<150 {
            let op = #"{"op":"presence","work_session_id":"\#(sessions[index % 3])","user_id":"fake-\#(index)"}"#
            burst += FrameEncoder.frame(.text, Array(op.utf8), maskKey: WebSocketClient.maskKey)
        }
        try socket.sendRaw(burst)
        var present = 0
        var refused = 0
        while present + refused < 150 {
            let message = try await socket.nextJSON(timeout: 20)
            if message["op"] == "present" { present += 1 }
            if message["code"] == "too_many_presences" { refused += 1 }
        }
        #expect(present == 2)
        #expect(refused == 148)
        // Which two were held depends on which session's look-up answered first; the
        // presence thread writes them to Redis after the socket is told.
        let client = server.client
        func held() async throws -> Int {
            var held = 0
            for session in sessions {
                held += try await client.get("/api/v1/presence/\(session)").json["users"]?.array?.count ?? 0
            }
            return held
        }
        try await eventually("the two held presences are listed", within: 30) { try await held() >= 2 }
        #expect(try await held() == 2)
    }

    @Test func presenceInASessionThatDoesNotExistIsNotFound() async throws {
        let server = try await Self.server.get().server
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "presence", "work_session_id": .string(UUID().uuidString), "user_id": "ghost"])
        #expect(try await socket.next(op: "error")["code"] == "not_found")
        let rest = try await server.client.post("/api/v1/presence/\(UUID().uuidString)", ["user_id": "ghost"])
        #expect(rest.status == 404)
    }

    @Test func aFullSessionRefusesOneUserMoreOverRESTAndWebSocket() async throws {
        let server = try await Self.server.get().server
        let session = try await session(server)
        for user in ["a", "b", "c"] {
            #expect(
                try await server.client.post("/api/v1/presence/\(session)", ["user_id": .string(user)]).status == 200)
        }
        let refused = try await server.client.post("/api/v1/presence/\(session)", ["user_id": "d"])
        #expect(refused.status == 429)
        #expect(refused.json["error"]?["code"] == "presence_full")
        #expect(refused.header("Retry-After") != nil)
        #expect(
            try await server.client.post("/api/v1/presence/\(session)", ["user_id": "a"]).status == 200,
            "a present user keeps beating")
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "presence", "work_session_id": .string(session), "user_id": "e"])
        #expect(try await socket.next(op: "error")["code"] == "presence_full")
        #expect(try await server.client.get("/api/v1/presence/\(session)").json["users"]?.array?.count == 3)
    }

    @Test func changesSubscribersGetJoinsAndLeavesAfterOneFullList() async throws {
        let server = try await Self.server.get().server
        let session = try await session(server)
        #expect(try await server.client.post("/api/v1/presence/\(session)", ["user_id": "first"]).status == 200)
        let watcher = try WebSocketClient(port: server.wsPort)
        try watcher.send(["op": "subscribe", "topic": .string("work_session:\(session)"), "presence": "changes"])
        _ = try await watcher.next(op: "subscribed")
        #expect(try await watcher.next(op: "presence")["users"] == ["first"], "the full list once")
        let full = try WebSocketClient(port: server.wsPort)
        try full.send(["op": "subscribe", "topic": .string("work_session:\(session)")])
        _ = try await full.next(op: "subscribed")
        _ = try await full.next(op: "presence")

        #expect(try await server.client.post("/api/v1/presence/\(session)", ["user_id": "second"]).status == 200)
        let joined = try await watcher.next(op: "presence")
        #expect(joined["joined"] == ["second"])
        #expect(joined["left"] == [])
        #expect(joined["users"] == nil)
        #expect(try await full.next(op: "presence")["users"]?.array?.count == 2, "the default is still the whole list")

        #expect(try await server.client.delete("/api/v1/presence/\(session)/first").status == 200)
        let left = try await watcher.next(op: "presence")
        #expect(left["joined"] == [])
        #expect(left["left"] == ["first"])

        try watcher.send(["op": "subscribe", "topic": .string("space:\(UUID())"), "presence": "some"])
        #expect(try await watcher.next(op: "error")["field"] == "presence")
    }

    @Test func withAuthenticationAConnectionIsPresentAsItsSubjectOnly() async throws {
        let server = try await LazyServer("presence_subject") { Tokens.serverArguments() }.get().server
        let admin = try Tokens.token("acme", "admin")
        let space = try await server.client.send(
            "POST", "/api/v1/spaces", json: ["key": "k", "name": "n"], headers: Tokens.bearer(admin))
        let session = try await server.client.send(
            "POST", "/api/v1/work-sessions", json: ["space_id": space.json["id"]!],
            headers: Tokens.bearer(admin))
        let id = try #require(session.json["id"]?.string)
        let socket = try WebSocketClient(
            port: server.wsPort, headers: ["Authorization: Bearer \(try Tokens.token("acme", "write", sub: "fitter"))"])
        try socket.send(["op": "presence", "work_session_id": .string(id), "user_id": "somebody-else"])
        #expect(try await socket.next(op: "error")["code"] == "forbidden")
        try socket.send(["op": "presence", "work_session_id": .string(id)])
        #expect(try await socket.next(op: "present")["user_id"] == "fitter")
        await server.terminate()
    }
}
