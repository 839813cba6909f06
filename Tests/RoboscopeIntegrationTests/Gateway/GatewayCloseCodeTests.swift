import Foundation
import Testing
import RoboscopeDomain
import WebSocketCodec

/// Every close code the gateway sends, provoked over a real socket.
@Suite struct GatewayCloseCodeTests {
    func socket() async throws -> WebSocketClient {
        let (server, _) = try await SharedServer.shared.get()
        return try WebSocketClient(port: server.wsPort)
    }

    func expectClose(
        _ socket: WebSocketClient, _ code: CloseCode, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let close = try await socket.closeFrame()
        #expect(close?.code == code, sourceLocation: sourceLocation)
    }

    @Test func unmaskedFramesClose1002() async throws {
        let socket = try await socket()
        try socket.sendRaw(FrameEncoder.frame(.text, Array("{}".utf8)))
        try await expectClose(socket, .protocolError)
    }

    @Test(
        arguments: [
            [0xC1, 0x80, 1, 2, 3, 4],  // RSV1 without an extension
            [0x83, 0x80, 1, 2, 3, 4],  // reserved data opcode
            [0x8B, 0x80, 1, 2, 3, 4],  // reserved control opcode
            [0x09, 0x80, 1, 2, 3, 4],  // fragmented ping
            [0x80, 0x80, 1, 2, 3, 4],  // continuation with nothing to continue
        ] as [[UInt8]])
    func malformedFramesClose1002(frame: [UInt8]) async throws {
        let socket = try await socket()
        try socket.sendRaw(frame)
        try await expectClose(socket, .protocolError)
    }

    @Test func controlFramesOver125BytesClose1002() async throws {
        let socket = try await socket()
        try socket.send(.ping, Array(repeating: 7, count: 126))
        try await expectClose(socket, .protocolError)
    }

    @Test func invalidUTF8Closes1007EvenSplitAcrossFragments() async throws {
        let whole = try await socket()
        try whole.send(.text, [0x7B, 0xC3, 0x28, 0x7D])
        try await expectClose(whole, .invalidPayload)

        // The bad byte arrives in the second fragment; the message never finishes.
        let split = try await socket()
        try split.send(.text, [0x7B, 0xE2], fin: false)
        try split.send(.continuation, [0x28], fin: false)
        try await expectClose(split, .invalidPayload)
    }

    @Test func messagesOverTheLimitClose1009() async throws {
        let socket = try await socket()
        // Only the header: a 2 MiB frame is refused before its payload is sent.
        try socket.sendRaw(FrameEncoder.header(.text, length: 2 << 20, maskKey: WebSocketClient.maskKey))
        try await expectClose(socket, .messageTooBig)
    }

    @Test func closeHandshakeEchoesTheCode() async throws {
        let socket = try await socket()
        try socket.send(.ping, Array("still there?".utf8))
        #expect(try await socket.next() == .pong(Array("still there?".utf8)))
        try socket.sendClose(.normal, reason: "done")
        try await expectClose(socket, .normal)
        // The server ends the TCP connection after the handshake.
        _ = try? await socket.next(timeout: 3)
        #expect(socket.sawEndOfStream)
    }

    @Test func fragmentedMessagesWithInterleavedPingsAreUnderstood() async throws {
        let socket = try await socket()
        let message = Array(#"{"op":"dance"}"#.utf8)
        try socket.send(.text, Array(message[..<5]), fin: false)
        try socket.send(.ping, [9])
        try socket.send(.continuation, Array(message[5...]))
        #expect(try await socket.next() == .pong([9]))
        #expect(try await socket.nextJSON()["code"] == "unknown_op")
    }

    @Test func badUpgradesAreRefusedWithHTTPErrors() async throws {
        let (server, _) = try await SharedServer.shared.get()
        func head(_ lines: [String]) -> String { lines.joined(separator: "\r\n") + "\r\n\r\n" }
        let good = [
            "GET /api/v1/ws HTTP/1.1", "Host: localhost", "Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
        ]
        let oldVersion = try WebSocketClient.rawRequest(
            port: server.wsPort, head(good.map { $0.replacingOccurrences(of: "Version: 13", with: "Version: 8") }))
        #expect(oldVersion.hasPrefix("HTTP/1.1 426 "))
        #expect(oldVersion.contains("Sec-WebSocket-Version: 13"))
        let plain = try WebSocketClient.rawRequest(
            port: server.wsPort,
            head(["GET /api/v1/ws HTTP/1.1", "Host: localhost"]))
        #expect(plain.hasPrefix("HTTP/1.1 426 "))
        let badKey = try WebSocketClient.rawRequest(
            port: server.wsPort, head(good.map { $0.hasPrefix("Sec-WebSocket-Key") ? "Sec-WebSocket-Key: abc" : $0 }))
        #expect(badKey.hasPrefix("HTTP/1.1 400 "))
        #expect(badKey.contains("Sec-WebSocket-Key"))
        let wrongPath = try WebSocketClient.rawRequest(
            port: server.wsPort, head(good.map { $0.replacingOccurrences(of: "/api/v1/ws", with: "/nope") }))
        #expect(wrongPath.hasPrefix("HTTP/1.1 404 "))
        // The echo endpoint is off unless --ws-echo.
        let echo = try WebSocketClient.rawRequest(
            port: server.wsPort, head(good.map { $0.replacingOccurrences(of: "/api/v1/ws", with: "/api/v1/ws/echo") }))
        #expect(echo.hasPrefix("HTTP/1.1 404 "))
        let garbage = try WebSocketClient.rawRequest(port: server.wsPort, "\u{16}\u{03}\u{01}\r\n\r\n")
        #expect(garbage.hasPrefix("HTTP/1.1 400 "))
    }

    @Test func sigtermClosesEverySocketWith1001() async throws {
        let server = try await ServerProcess(databaseURL: try await TestDatabase.fresh("sigterm"))
        let sockets = try (0..<3).map { _ in try WebSocketClient(port: server.wsPort) }
        // Make sure the server holds them open before the signal.
        for socket in sockets {
            try socket.send(["op": "dance"])
            _ = try await socket.nextJSON()
        }
        kill(server.process.processIdentifier, SIGTERM)
        for socket in sockets {
            let close = try await socket.closeFrame()
            #expect(close?.code == .goingAway)
            try socket.sendClose(.goingAway)
        }
        _ = await server.process.exitStatus()
        #expect(server.process.terminationStatus == 0)
    }
}
