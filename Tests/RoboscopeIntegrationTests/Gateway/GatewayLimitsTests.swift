import Foundation
import Testing
import RoboscopeDomain
import WebSocketCodec
#if canImport(Glibc)
import Glibc
#endif

/// Limits, slow consumers and dead peers, each against a server configured for it.
@Suite(.serialized) struct GatewayLimitsTests {
    @Test func connectionAndSubscriptionLimitsAreEnforced() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("wslimits"),
            extraArguments: ["--ws-max-connections-per-client", "2", "--ws-max-subscriptions", "2"]
        )
        let fixtures = Fixtures(client: server.client)
        let space = try await fixtures.space()
        let sessions = [
            try await fixtures.session(in: space), try await fixtures.session(in: space),
            try await fixtures.session(in: space),
        ]
        let first = try WebSocketClient(port: server.wsPort)
        let second = try WebSocketClient(port: server.wsPort)
        #expect(throws: TestFailure.self) { _ = try WebSocketClient(port: server.wsPort) }
        let refused = try WebSocketClient.rawRequest(
            port: server.wsPort,
            """
            GET /api/v1/ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
            Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n
            """)
        #expect(refused.hasPrefix("HTTP/1.1 429 "))
        for session in sessions.prefix(2) {
            try first.send(["op": "subscribe", "topic": .string("work_session:\(Fixtures.id(session))")])
            #expect(try await first.next(op: "subscribed")["op"] == "subscribed")
        }
        try first.send(["op": "subscribe", "topic": .string("work_session:\(Fixtures.id(sessions[2]))")])
        #expect(try await first.next(op: "error")["code"] == "too_many_subscriptions")
        _ = second
    }

    /// Behind a trusted proxy every connection comes from the proxy's address: the cap
    /// counts the client `X-Forwarded-For` names, so one client is capped and another
    /// behind the same proxy is not.
    @Test func theConnectionCapCountsTheClientATrustedProxyNames() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("wsproxycap"),
            extraArguments: ["--ws-max-connections-per-client", "2", "--trusted-proxies", "127.0.0.0/8"]
        )
        let first = try WebSocketClient(port: server.wsPort, headers: ["X-Forwarded-For: 203.0.113.7"])
        let second = try WebSocketClient(port: server.wsPort, headers: ["X-Forwarded-For: 203.0.113.7"])
        #expect(throws: TestFailure.self) {
            _ = try WebSocketClient(port: server.wsPort, headers: ["X-Forwarded-For: 203.0.113.7"])
        }
        let other = try WebSocketClient(port: server.wsPort, headers: ["X-Forwarded-For: 198.51.100.9"])
        let direct = try WebSocketClient(port: server.wsPort)
        _ = (first, second, other, direct)
    }

    @Test func aSlowReaderIsClosedWhileAFastOneKeepsReceiving() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("wsslow"), extraArguments: ["--ws-max-buffered", "65536"]
        )
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let topic: JSONValue = .string("work_session:\(Fixtures.id(session))")
        // A small receive buffer: the kernel cannot soak up what the reader leaves unread.
        let slow = try WebSocketClient(port: server.wsPort, receiveBuffer: 4096)
        let fast = try WebSocketClient(port: server.wsPort)
        for socket in [slow, fast] {
            try socket.send(["op": "subscribe", "topic": topic])
            _ = try await socket.next(op: "subscribed")
        }
        // Each marker event carries ~8 KiB of meta; 200 of them (1.6 MB) are far past the
        // 64 KiB bound plus what the kernel buffers (512 KiB send, 4 KiB receive).
        let padding = JSONValue.string(String(repeating: "x", count: 8000))
        let count = 200
        let writer = Task {
            for _ in 0..<count { _ = try await fixtures.marker(in: session, ["meta": ["padding": padding]]) }
        }
        var fastCreated = 0
        while fastCreated < count {
            if try await fast.next(op: "event", timeout: 20)["type"] == "marker.created" { fastCreated += 1 }
        }
        try await writer.value
        // Now the slow one reads: some events, then the close (1013), never all of them.
        var slowCreated = 0
        var closeCode: CloseCode?
        reading: while true {
            do {
                switch try await slow.next(timeout: 10) {
                case .message(_, let payload):
                    if try JSONParser.parse(payload)["type"] == "marker.created" { slowCreated += 1 }
                case .close(let code, _):
                    closeCode = code
                    break reading
                default: continue
                }
            } catch {
                break reading  // the server gave up waiting and closed the socket
            }
        }
        #expect(slowCreated < count)
        #expect(closeCode == nil || closeCode == .tryAgainLater)
        #expect(slow.sawEndOfStream || closeCode == .tryAgainLater)

        // A replay far larger than the bound is not a slow reader: all of it arrives.
        let resuming = try WebSocketClient(port: server.wsPort)
        try resuming.send(["op": "subscribe", "topic": topic, "since": 0])
        _ = try await resuming.next(op: "subscribed")
        var replayed = 0
        while replayed < count {
            if try await resuming.next(op: "event", timeout: 20)["type"] == "marker.created" { replayed += 1 }
        }
    }

    @Test func idleConnectionsArePingedAndDeadOnesClosed() async throws {
        let server = try await ServerProcess(
            // 2 s leaves a loaded test machine time to answer; the live client has as long
            // again after each ping.
            databaseURL: try await TestDatabase.fresh("wsping"), extraArguments: ["--ws-ping-interval", "2"]
        )
        let alive = try WebSocketClient(port: server.wsPort)
        let dead = try WebSocketClient(port: server.wsPort)
        // The live one answers pings and stays; the dead one never answers.
        guard case .ping(let payload) = try await alive.next(timeout: 10) else { throw TestFailure("expected a ping") }
        try alive.send(.pong, payload)
        guard case .ping = try await dead.next(timeout: 10) else { throw TestFailure("expected a ping") }
        let closed = try? await dead.next(timeout: 10)
        #expect(closed == nil)
        #expect(dead.sawEndOfStream)
        try alive.send(["op": "dance"])
        #expect(try await alive.nextJSON()["code"] == "unknown_op")
    }
}
