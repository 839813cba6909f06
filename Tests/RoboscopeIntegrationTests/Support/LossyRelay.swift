import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 relay on loopback that forwards each request to the service, waits for
/// its whole answer, and then, for the requests `loses` picks, closes the client's
/// connection instead of passing the answer on: the write was committed, the client
/// never hears so. That is the case idempotency keys exist for, and what a cellular
/// link does when it drops between the request and the answer.
final class LossyRelay: @unchecked Sendable {
    let port: Int
    private let upstreamPort: Int
    private let loses: @Sendable (_ number: Int, _ head: String) -> Bool
    private let listener: Int32
    private let state = Mutex<(count: Int, lost: [String])>((0, []))

    /// `loses(n, head)` decides for the n-th request (from 1) with its request line and headers.
    init(to upstreamPort: Int, loses: @escaping @Sendable (_ number: Int, _ head: String) -> Bool) throws {
        self.upstreamPort = upstreamPort
        self.loses = loses
        port = try FreePort.pick()
        listener = try Loopback.listener(port: port, what: "relay")
        let thread = Thread { [listener] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { return }
                let connection = Thread { self.relay(client) }
                connection.start()
            }
        }
        thread.start()
    }

    /// The heads of the requests whose answers were withheld.
    var lost: [String] { state.withLock { $0.lost } }
    /// Requests seen.
    var count: Int { state.withLock { $0.count } }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func relay(_ client: Int32) {
        defer { close(client) }
        guard let upstream = try? WebSocketClient.connect(port: upstreamPort) else { return }
        defer { close(upstream) }
        var fromClient = HTTPStream(fd: client)
        var fromUpstream = HTTPStream(fd: upstream)
        while let request = fromClient.readMessage(isResponse: false) {
            let number = state.withLock {
                $0.count += 1; return $0.count
            }
            let head = String(decoding: request.head, as: UTF8.self)
            guard Self.writeAll(upstream, request.bytes), let response = fromUpstream.readMessage(isResponse: true)
            else { return }
            if loses(number, head) {
                state.withLock { $0.lost.append(head) }
                return
            }
            guard Self.writeAll(client, response.bytes) else { return }
            // As a proxy does: an answer that closes its connection closes the client's.
            if String(decoding: response.head, as: UTF8.self).lowercased().contains("\r\nconnection: close") { return }
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return false }
            offset += written
        }
        return true
    }
}

/// Reads whole HTTP/1.1 messages (Content-Length or chunked bodies) off a socket.
private struct HTTPStream {
    let fd: Int32
    var buffer: [UInt8] = []

    mutating func readMessage(isResponse: Bool) -> (head: [UInt8], bytes: [UInt8])? {
        guard let headEnd = until({ $0.firstRange(of: [13, 10, 13, 10]).map { $0.upperBound } }) else { return nil }
        let head = Array(buffer[..<headEnd])
        let text = String(decoding: head, as: UTF8.self).lowercased()
        var length = 0
        if let line = text.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }) {
            length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        } else if text.contains("transfer-encoding: chunked") {
            guard let end = until({ Self.chunkedEnd($0, from: headEnd) }) else { return nil }
            length = end - headEnd
        }
        guard until({ $0.count >= headEnd + length ? headEnd + length : nil }) != nil else { return nil }
        let bytes = Array(buffer[..<(headEnd + length)])
        buffer.removeFirst(headEnd + length)
        return (head, bytes)
    }

    /// Reads until `found` answers, or nil when the peer closes first.
    private mutating func until(_ found: ([UInt8]) -> Int?) -> Int? {
        while true {
            if let index = found(buffer) { return index }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return nil }
            buffer += chunk[..<count]
        }
    }

    /// Where a chunked body that starts at `start` ends, once all of it is in `bytes`.
    static func chunkedEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start
        while true {
            guard let lineEnd = bytes[index...].firstRange(of: [13, 10])?.lowerBound else { return nil }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
            index = lineEnd + 2 + size + 2
            if size == 0 { return bytes.count >= index ? index : nil }
            if index > bytes.count { return nil }
        }
    }
}
