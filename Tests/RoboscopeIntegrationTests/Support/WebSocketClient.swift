import Foundation
import RoboscopeDomain
import WebSocketCodec
#if canImport(Glibc)
import Glibc
#endif

/// A WebSocket client over a plain blocking socket, built on the project's codec in
/// the client role. Reads wait on their own thread, so tests can await them.
/// It never answers pings by itself: tests decide.
final class WebSocketClient: @unchecked Sendable {
    let fd: Int32
    private var reader = MessageReader(role: .client, maxMessageSize: 64 << 20)
    private var ready: [MessageReader.Output] = []
    private(set) var sawEndOfStream = false
    /// permessage-deflate as the server agreed it (nil: none offered, or none agreed).
    private(set) var deflate: PerMessageDeflate?
    /// Bytes read after the upgrade's head: what the connection cost on the wire.
    private(set) var bytesRead = 0

    /// Connects and upgrades; throws with the status line if the server refuses.
    /// `extensions`: a `Sec-WebSocket-Extensions` offer (`PerMessageDeflate.clientOffer`).
    init(
        port: Int, path: String = "/api/v1/ws", receiveBuffer: Int32? = nil, headers: [String] = [],
        extensions: String? = nil
    ) throws {
        fd = try Self.connect(port: port, receiveBuffer: receiveBuffer)
        let key = Base64.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for header in headers { request += header + "\r\n" }
        if let extensions { request += "Sec-WebSocket-Extensions: \(extensions)\r\n" }
        try sendRaw(Array((request + "\r\n").utf8))
        var head: [UInt8] = []
        while UpgradeParser.headEnd(head) == nil {
            let chunk = try readChunk(timeout: 5)
            guard !chunk.isEmpty else { throw TestFailure("connection closed during the handshake") }
            head += chunk
        }
        let end = UpgradeParser.headEnd(head)!
        let text = String(decoding: head[..<end], as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 101"),
            text.contains("Sec-WebSocket-Accept: \(HandshakeResponse.acceptValue(forKey: key))")
        else {
            // Not closed here: every stored property is set, so deinit runs and closes it. A
            // second close could close a socket another test opened meanwhile under the same
            // number (a CI run's refused upgrade and another test's socket once shared one).
            throw TestFailure("upgrade refused: \(text.split(separator: "\r\n").first ?? "")")
        }
        let answered = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("sec-websocket-extensions:") }
            .map { String($0.drop { $0 != ":" }.dropFirst()) }
        deflate = try PerMessageDeflate.accepted(response: answered).get()
        reader = MessageReader(
            role: .client, maxMessageSize: 64 << 20,
            compression: deflate.map { .init(peerKeepsContext: $0.serverContextTakeover) })
        let rest = Array(head[(end + 4)...])
        bytesRead += rest.count
        if !rest.isEmpty { reader.feed(rest) { self.ready.append($0) } }
    }

    deinit { close(fd) }

    static func connect(port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
        try Loopback.connect(port: port, receiveBuffer: receiveBuffer)
    }

    /// Sends an HTTP request head as given and returns the response head (status line and headers).
    static func rawRequest(port: Int, _ request: String) throws -> String {
        try rawExchange(port: port, request, idle: 5).text
    }

    /// Sends a whole HTTP request as given and reads what comes back until the server
    /// closes the connection (`closed`) or `idle` seconds pass without a byte: a server
    /// that keeps the connection for the next request answers and then stays silent.
    static func rawExchange(port: Int, _ request: String, idle: Int32) throws -> (text: String, closed: Bool) {
        let client = try connect(port: port)
        defer { close(client) }
        _ = Array(request.utf8).withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
        return readUntilClosed(client, seconds: idle)
    }

    /// Reads until the peer closes (`closed`) or `seconds` pass without a byte.
    static func readUntilClosed(_ socket: Int32, seconds: Int32) -> (text: String, closed: Bool) {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        while poll(&poller, 1, seconds * 1000) > 0 {
            let count = read(socket, &buffer, buffer.count)
            if count <= 0 { return (String(decoding: bytes, as: UTF8.self), true) }
            bytes += buffer[..<count]
        }
        return (String(decoding: bytes, as: UTF8.self), false)
    }

    // MARK: Sending

    func sendRaw(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            // MSG_NOSIGNAL: a server that already closed must fail the test, not kill the
            // whole test process with SIGPIPE.
            let count = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { throw TestFailure("write failed: errno \(errno)") }
            offset += count
        }
    }

    static let maskKey: [UInt8] = [0x11, 0x22, 0x33, 0x44]

    func send(_ opcode: Opcode, _ payload: [UInt8], fin: Bool = true) throws {
        try sendRaw(FrameEncoder.frame(opcode, payload, fin: fin, maskKey: Self.maskKey))
    }

    func send(_ message: JSONValue) throws {
        try send(.text, message.jsonBytes(.wire))
    }

    func sendClose(_ code: CloseCode, reason: String = "") throws {
        try sendRaw(FrameEncoder.close(code, reason: reason, maskKey: Self.maskKey))
    }

    // MARK: Receiving

    /// The next frame-level output, waiting up to `timeout` seconds.
    func next(timeout: Double = 5) async throws -> MessageReader.Output {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try self.nextBlocking(timeout: timeout) }) }.start()
        }
    }

    /// The next JSON message, skipping pings (answered) and pongs.
    func nextJSON(timeout: Double = 5) async throws -> JSONValue {
        while true {
            switch try await next(timeout: timeout) {
            case .message(.text, let payload): return try JSONParser.parse(payload)
            case .ping(let payload): try send(.pong, payload)
            case .pong: continue
            case let other: throw TestFailure("expected a JSON message, got \(other)")
            }
        }
    }

    /// Reads until the next message whose `op` is `op` (other ops are skipped).
    func next(op: String, timeout: Double = 5) async throws -> JSONValue {
        while true {
            let message = try await nextJSON(timeout: timeout)
            if message["op"]?.string == op { return message }
        }
    }

    /// Reads until the next event of a stream type (earlier events are skipped).
    func nextEvent(streamType: String, timeout: Double = 5) async throws -> JSONValue {
        while true {
            let event = try await next(op: "event", timeout: timeout)
            if event["stream_type"]?.string == streamType { return event }
        }
    }

    /// Reads until the server's close frame; returns its code and reason (nil at a bare end of stream).
    func closeFrame(timeout: Double = 5) async throws -> (code: CloseCode?, reason: String)? {
        while true {
            do {
                switch try await next(timeout: timeout) {
                case .close(let code, let reason): return (code, reason)
                default: continue
                }
            } catch let failure as TestFailure where failure.description == "end of stream" {
                return nil
            }
        }
    }

    private func nextBlocking(timeout: Double) throws -> MessageReader.Output {
        let deadline = Date().addingTimeInterval(timeout)
        while ready.isEmpty {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw TestFailure("no message within \(timeout) s") }
            let chunk = try readChunk(timeout: left)
            if chunk.isEmpty {
                sawEndOfStream = true
                throw TestFailure("end of stream")
            }
            bytesRead += chunk.count
            reader.feed(chunk) { self.ready.append($0) }
        }
        return ready.removeFirst()
    }

    private func readChunk(timeout: Double) throws -> [UInt8] {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, Int32(max(1, timeout * 1000)))
        guard ready > 0 else { throw TestFailure("no message within \(timeout) s") }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = read(fd, &buffer, buffer.count)
        if count < 0 { return [] }
        return Array(buffer[..<count])
    }
}
