import Foundation
import Testing
import RoboscopeDomain

/// The `presence` op, pushes to subscribers, and the reconnect grace period.
@Suite(.serialized) struct GatewayPresenceTests {
    // A grace a loaded CI machine cannot outrun between a close and the reconnect that
    // follows 300 ms later (1.5 s was outrun once with the whole suite running, and 3 s
    // once beside the suites that render 6.5 MB answers).
    static let grace = 6.0
    static let shared = LazyServer("wspresence") { ["--ws-presence-grace", "6", "--presence-window", "30"] }

    /// A watcher subscribed to a fresh session, with the initial (empty) presence read.
    func watcher() async throws -> (ServerProcess, WebSocketClient, session: String) {
        let server = try await Self.shared.get().server
        let fixtures = Fixtures(client: server.client)
        let session = Fixtures.id(try await fixtures.session(in: try await fixtures.space()))
        let watcher = try WebSocketClient(port: server.wsPort)
        try watcher.send(["op": "subscribe", "topic": .string("work_session:\(session)")])
        _ = try await watcher.next(op: "subscribed")
        #expect(try await watcher.next(op: "presence")["users"] == [])
        return (server, watcher, session)
    }

    func present(_ port: Int, _ session: String, _ user: String) async throws -> WebSocketClient {
        let socket = try WebSocketClient(port: port)
        try socket.send(["op": "presence", "work_session_id": .string(session), "user_id": .string(user)])
        #expect(try await socket.nextJSON()["op"] == "present")
        return socket
    }

    @Test func presenceOpJoinsAndClosingLeavesAfterTheGrace() async throws {
        let (server, watcher, session) = try await watcher()
        let tech = try await present(server.wsPort, session, "tech-1")
        #expect(try await watcher.next(op: "presence")["users"] == ["tech-1"])
        #expect(try await server.client.get("/api/v1/presence/\(session)").json["users"] == ["tech-1"])
        // Gone only after the grace period, which starts when the server sees the close:
        // after this clock starts, however long the close handshake takes to come back.
        let started = Date()
        try tech.sendClose(.normal)
        _ = try await tech.closeFrame()
        #expect(try await watcher.next(op: "presence", timeout: Self.grace + 10)["users"] == [])
        #expect(Date().timeIntervalSince(started) >= Self.grace - 0.5)
    }

    @Test func aQuickReconnectCausesNoLeaveAndJoin() async throws {
        let (server, watcher, session) = try await watcher()
        var tech = try await present(server.wsPort, session, "tech-2")
        #expect(try await watcher.next(op: "presence")["users"] == ["tech-2"])
        for _ in 0..<3 {
            try tech.sendClose(.normal)
            // The server has seen the drop once its close frame is back; the device comes
            // back at once, well inside the grace.
            _ = try await tech.closeFrame()
            tech = try await present(server.wsPort, session, "tech-2")
        }
        // Past the grace period of every drop: nobody saw tech-2 leave. Only a quiet
        // wait counts; a closed watcher would prove nothing.
        do {
            let message = try await watcher.next(op: "presence", timeout: Self.grace + 1)
            Issue.record("unexpected presence change: \(message)")
        } catch let failure as TestFailure where failure.description.hasPrefix("no message within") {
            #expect(!watcher.sawEndOfStream, "the watcher is still connected")
        }
        #expect(try await server.client.get("/api/v1/presence/\(session)").json["users"] == ["tech-2"])
        _ = tech
    }
}
