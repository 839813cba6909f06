#if canImport(Glibc)
import Foundation
import Synchronization
import Glibc
import WebSocketCodec

/// WebSocket over a TCP socket, in the clear or over TLS (OpenSSL), with the project's
/// RFC 6455 codec in the client role: the transport for Linux, where FoundationNetworking's
/// `URLSessionWebSocketTask` fails at once ("WebSockets not supported by libcurl"). One
/// thread per connection connects, reads and answers pings; nothing blocks Swift's
/// cooperative pool. `wss://` verifies the server's certificate and name against the
/// system's authorities, or those of `trustedCertificatesFile`.
public struct SocketWebSocketTransport: WebSocketTransport {
    /// The largest message accepted (a larger one closes the connection with 1009).
    public var maximumMessageSize: Int
    /// Seconds to connect and finish the upgrade.
    public var connectTimeout: Double
    /// Whether to offer permessage-deflate (RFC 7692): the server's events then arrive
    /// compressed, a catch-up as one stream. The kit's own messages are small and go
    /// uncompressed, which the RFC allows.
    public var offersCompression: Bool
    /// A PEM file of the certificate authorities `wss://` trusts; nil trusts the system's
    /// (which `SSL_CERT_FILE` and `SSL_CERT_DIR` can point elsewhere).
    public var trustedCertificatesFile: String? { tls.trustedCertificatesFile }
    private let tls: TLSContext

    /// Connections that accept messages up to `maximumMessageSize` (after inflation), give
    /// up connecting after `connectTimeout` seconds, and offer compression unless told not to.
    public init(
        maximumMessageSize: Int = 16 << 20, connectTimeout: Double = 10, offersCompression: Bool = true,
        trustedCertificatesFile: String? = nil
    ) {
        self.maximumMessageSize = maximumMessageSize
        self.connectTimeout = connectTimeout
        self.offersCompression = offersCompression
        tls = TLSContext(trustedCertificatesFile: trustedCertificatesFile)
    }

    public func connect(to url: URL, headers: [String: String]) async throws -> any WebSocketConnection {
        let scheme = url.scheme?.lowercased()
        guard scheme == "ws" || scheme == "wss", let host = url.host else {
            throw RoboscopeError.transport(
                "SocketWebSocketTransport speaks ws:// and wss:// only, not \(url.absoluteString)")
        }
        let tls = scheme == "wss" ? tls : nil
        let port = url.port ?? (tls == nil ? 80 : 443)
        let target = (url.path.isEmpty ? "/" : url.path) + (url.query.map { "?" + $0 } ?? "")
        let timeout = connectTimeout
        let compression = offersCompression
        let headerLines = try headers.map { try SocketHTTPTransport.headerLine($0.key, $0.value) }.joined()
        let (stream, leftover, deflate) = try await onThread(named: "ws-connect") {
            try SocketWebSocketTransport.open(
                host: host, port: port, tls: tls, target: target, headerLines: headerLines,
                timeout: timeout, offersCompression: compression)
        }
        return SocketWebSocketConnection(
            stream: stream, leftover: leftover, maximumMessageSize: maximumMessageSize, deflate: deflate)
    }

    /// Connects and upgrades, blocking: returns the connection, the bytes read past the
    /// upgrade's head and the compression the server agreed to.
    static func open(
        host: String, port: Int, tls: TLSContext?, target: String, headerLines: String, timeout: Double,
        offersCompression: Bool
    ) throws -> (SocketStream, [UInt8], PerMessageDeflate?) {
        let fd = try TCPSocket.connect(host: host, port: port, timeout: timeout)
        do {
            let stream = try SocketStream(fd: fd, host: host, tls: tls, timeout: timeout, readTimeout: timeout)
            let key = Base64.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
            let head =
                "GET \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
                + (offersCompression ? "Sec-WebSocket-Extensions: \(PerMessageDeflate.clientOffer)\r\n" : "")
            try stream.write(Array((head + headerLines + "\r\n").utf8))
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while UpgradeParser.headEnd(received) == nil {
                let count = try stream.read(into: &buffer)
                guard count > 0 else {
                    throw RoboscopeError.transport("the connection closed during the WebSocket upgrade")
                }
                received += buffer[..<count]
                guard received.count < 65_536 else {
                    throw RoboscopeError.malformedResponse("an upgrade answer without an end")
                }
            }
            let end = UpgradeParser.headEnd(received)!
            let answer = String(decoding: received[..<end], as: UTF8.self)
            let lines = answer.split(separator: "\r\n")
            guard let status = lines.first, status.hasPrefix("HTTP/1.1 101") else {
                let body = String(decoding: received[min(received.count, end + 4)...], as: UTF8.self)
                throw WebSocketRefusal.upgrade(status: String(lines.first ?? ""), body: body)
            }
            let accept = HandshakeResponse.acceptValue(forKey: key)
            guard lines.contains(where: { $0.lowercased().hasPrefix("sec-websocket-accept:") && $0.hasSuffix(accept) })
            else {
                throw RoboscopeError.malformedResponse("the WebSocket upgrade's accept key does not match")
            }
            let extensions = lines.compactMap { line -> Substring? in
                guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == "sec-websocket-extensions"
                else { return nil }
                return line[line.index(after: colon)...]
            }.joined(separator: ",")
            let deflate: PerMessageDeflate?
            switch PerMessageDeflate.accepted(response: extensions.isEmpty ? nil : extensions) {
            case .success(let agreed) where agreed == nil || offersCompression: deflate = agreed
            case .success:
                throw RoboscopeError.malformedResponse("the server answered permessage-deflate, which we did not offer")
            case .failure(let problem): throw RoboscopeError.malformedResponse(problem.description)
            }
            // Reads wait for data for ever (the reader thread); writes fail after a minute
            // stuck. Over TLS the reader waits in `poll`, and the socket's read limit only
            // ends a read that found part of a record, so that it gives the session's lock
            // back to the writers within a second.
            TCPSocket.setTimeouts(fd, seconds: tls == nil ? 0 : 1, sendSeconds: 60)
            return (stream.reading(timeout: 0), Array(received[(end + 4)...]), deflate)
        } catch {
            close(fd)
            throw error
        }
    }
}

/// One connection of `SocketWebSocketTransport`: the reader thread feeds messages into a
/// stream that `receive` drains.
actor SocketWebSocketConnection: WebSocketConnection {
    private let writer: SocketWriter
    private var messages: AsyncThrowingStream<String, any Error>.AsyncIterator

    init(stream socket: SocketStream, leftover: [UInt8], maximumMessageSize: Int, deflate: PerMessageDeflate?) {
        let (stream, continuation) = AsyncThrowingStream<String, any Error>.makeStream()
        writer = SocketWriter(stream: socket)
        messages = stream.makeAsyncIterator()
        let writer = self.writer
        let thread = Thread {
            SocketWebSocketConnection.read(
                writer, leftover: leftover, maximumMessageSize: maximumMessageSize,
                compression: deflate.map { .init(peerKeepsContext: $0.serverContextTakeover) },
                into: continuation)
        }
        thread.name = "ws-client-reader"
        thread.start()
    }

    func send(_ text: String) async throws {
        try writer.frame(.text, Array(text.utf8))
    }

    func receive() async throws -> String {
        var iterator = messages
        defer { messages = iterator }
        guard let message = try await iterator.next(isolation: #isolation) else {
            throw RoboscopeError.transport("the WebSocket connection is closed")
        }
        return message
    }

    func close() async {
        writer.shutdown(sendingClose: true)
    }

    /// The reader thread: frames in, messages out, pings answered, until the connection ends.
    private static func read(
        _ writer: SocketWriter, leftover: [UInt8], maximumMessageSize: Int, compression: MessageReader.Compression?,
        into continuation: AsyncThrowingStream<String, any Error>.Continuation
    ) {
        var reader = MessageReader(role: .client, maxMessageSize: maximumMessageSize, compression: compression)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var ended: (any Error)? = nil
        func handle(_ output: MessageReader.Output) {
            switch output {
            case .message(.text, let payload):
                continuation.yield(String(decoding: payload, as: UTF8.self))
            case .message(_, let payload):
                continuation.yield(String(decoding: payload, as: UTF8.self))
            case .ping(let payload):
                try? writer.frame(.pong, payload)
            case .pong, .compressed:
                // `.compressed` never comes: this reader inflates for itself.
                break
            case .close(let code, let reason):
                ended = ended ?? WebSocketRefusal.close(code: code.map { Int($0.rawValue) }, reason: reason)
            case .fail(let code, let reason):
                ended = ended ?? RoboscopeError.malformedResponse("WebSocket protocol error (\(code)): \(reason)")
            }
        }
        reader.feed(leftover, handle)
        while ended == nil {
            let count: Int
            do {
                count = try writer.stream.read(into: &buffer)
            } catch {
                ended = error
                break
            }
            if count == 0 {
                ended = RoboscopeError.transport("the connection closed")
                break
            }
            buffer.withUnsafeBytes { reader.feed(UnsafeRawBufferPointer(rebasing: $0[..<count]), handle) }
        }
        writer.shutdown(sendingClose: true)
        writer.release()
        continuation.finish(throwing: ended)
    }
}

/// The writing side of a socket, shared by the connection and its reader thread.
/// Writes, the close and the release happen under one lock, so frames never interleave
/// and nothing is written to a descriptor once it is closed.
final class SocketWriter: Sendable {
    let stream: SocketStream
    private let state = Mutex<(closed: Bool, released: Bool)>((false, false))

    init(stream: SocketStream) {
        self.stream = stream
    }

    func frame(_ opcode: Opcode, _ payload: [UInt8]) throws {
        let key = (0..<4).map { _ in UInt8.random(in: 0...255) }
        let stream = stream
        try state.withLock { state throws in
            guard !state.closed else { throw RoboscopeError.transport("the WebSocket connection is closed") }
            try stream.write(FrameEncoder.frame(opcode, payload, maskKey: key))
        }
    }

    /// Sends a close frame (once) and stops both directions; the reader thread then ends.
    func shutdown(sendingClose: Bool) {
        let stream = stream
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            if sendingClose {
                try? stream.write(FrameEncoder.close(.normal, maskKey: [1, 2, 3, 4]))
            }
            Glibc.shutdown(stream.fd, Int32(SHUT_RDWR))
        }
    }

    /// Closes the descriptor, once, when the reader thread is done with it.
    func release() {
        let fd = stream.fd
        state.withLock { state in
            guard !state.released else { return }
            state.released = true
            Glibc.close(fd)
        }
    }
}

#endif
