import Foundation
import Testing

/// Header size and slow-client limits, over raw sockets against one server with short
/// timeouts (3 s for a head, 1 s for a body).
@Suite(.serialized) struct HTTPLimitsTests {
    // The body deadline is shorter than the idle timeout, which also closes (silently) a
    // connection whose body stops arriving altogether: the 408 must come first.
    static let server = LazyServer("limits") {
        ["--header-limit", "4096", "--idle-timeout", "3", "--request-timeout", "1"]
    }

    /// A raw socket connected to the server.
    static func connectedSocket() async throws -> Int32 {
        try WebSocketClient.connect(port: try await server.get().server.port)
    }

    @Test func aHeadOverTheLimitIs431() async throws {
        let server = try await Self.server.get().server
        let padding = String(repeating: "a", count: 8000)
        let reply = try WebSocketClient.rawRequest(
            port: server.port, "GET /api/v1/spaces HTTP/1.1\r\nHost: localhost\r\nX-Padding: \(padding)\r\n\r\n"
        )
        #expect(reply.hasPrefix("HTTP/1.1 431"), "\(reply.prefix(200))")
        #expect(reply.contains(#""code":"headers_too_large""#))
        // Heads under the limit still pass.
        let small = try WebSocketClient.rawRequest(
            port: server.port, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        #expect(small.hasPrefix("HTTP/1.1 200"))
    }

    @Test func aMalformedRequestIs400() async throws {
        let server = try await Self.server.get().server
        let reply = try WebSocketClient.rawRequest(port: server.port, "GET /healthz HTTP/1.1\r\nHost x\r\n\r\n")
        #expect(reply.hasPrefix("HTTP/1.1 400"), "\(reply.prefix(200))")
        #expect(reply.contains(#""code":"bad_request""#))
    }

    @Test func aBodyThatStallsIs408AndTheConnectionCloses() async throws {
        let socket = try await Self.connectedSocket()
        defer { close(socket) }
        let started = ContinuousClock.now
        try send(
            socket,
            "POST /api/v1/spaces HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Content-Length: 100\r\n\r\n{\"key\":")
        let (reply, closed) = WebSocketClient.readUntilClosed(socket, seconds: 10)
        #expect(reply.hasPrefix("HTTP/1.1 408"), "\(reply.prefix(200))")
        #expect(reply.contains(#""code":"request_timeout""#))
        #expect(closed)
        #expect(ContinuousClock.now - started < .seconds(8))
    }

    @Test func aClientTricklingItsHeadIsCutOff() async throws {
        let socket = try await Self.connectedSocket()
        defer { close(socket) }
        let started = ContinuousClock.now
        var cutOff = false
        // One header line every 300 ms would take 30 s; the head timeout is 3 s.
        try send(socket, "GET /healthz HTTP/1.1\r\n")
        for index in 0..<100 {
            if closedByPeer(socket, within: .milliseconds(300)) || (try? send(socket, "X-Slow-\(index): y\r\n")) == nil
            {
                cutOff = true
                break
            }
        }
        #expect(cutOff)
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test func anIdleKeepAliveConnectionIsClosed() async throws {
        let socket = try await Self.connectedSocket()
        defer { close(socket) }
        try send(socket, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let started = ContinuousClock.now
        let (reply, closed) = WebSocketClient.readUntilClosed(socket, seconds: 10)
        #expect(reply.hasPrefix("HTTP/1.1 200"))
        #expect(closed)
        #expect(ContinuousClock.now - started >= .seconds(1))
    }

    private func send(_ socket: Int32, _ text: String) throws {
        let sent = Array(text.utf8).withUnsafeBytes {
            Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
        }
        guard sent == text.utf8.count else { throw TestFailure("send failed: errno \(errno)") }
    }

    /// Whether the server closes `socket` within `time` (what it sends before, a 408, is read
    /// and dropped): the trickling client's pace is this wait's bound, so the test goes on
    /// the moment the server cuts it off.
    private func closedByPeer(_ socket: Int32, within time: Duration) -> Bool {
        let deadline = ContinuousClock.now + time
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = (deadline - ContinuousClock.now).components
            let milliseconds = max(0, left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000)
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(milliseconds)) > 0 else { return false }
            let count = recv(socket, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count == 0 || (count < 0 && errno != EAGAIN) { return true }
        }
    }
}
