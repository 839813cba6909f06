#if canImport(Glibc)
import Foundation
import WebSocketCodec

/// Reads one HTTP/1.1 answer from the bytes of a connection, as they come: the socket
/// transport's parser (Linux only, like the transport), pure so that every framing is
/// tested without a socket.
///
/// The request went with `Connection: close`, so the answer is the last thing on the
/// connection: a body without a length ends where the connection does (`end()`).
package struct HTTPResponseReader {
    /// The largest answer accepted, head and body as received.
    package let maximumSize: Int
    /// A HEAD request's answer has headers only, whatever its `Content-Length` says.
    private let bodyless: Bool
    private var buffer: [UInt8] = []
    private var head: Head?

    private struct Head {
        var status: Int
        var headers: [String: String]
        /// Where the body starts in `buffer`.
        var bodyStart: Int
        var framing: Framing
    }

    private enum Framing {
        case none
        case length(Int)
        case chunked(ChunkedBody)
        case untilClose
    }

    package init(method: String, maximumSize: Int = 64 << 20) {
        self.maximumSize = maximumSize
        bodyless = method.uppercased() == "HEAD"
    }

    /// Takes the bytes read; returns the answer once it is complete.
    package mutating func consume(_ bytes: some Collection<UInt8>) throws -> HTTPResponseData? {
        buffer.append(contentsOf: bytes)
        guard buffer.count <= maximumSize else {
            throw RoboscopeError.malformedResponse("an answer larger than \(maximumSize) bytes")
        }
        return try answerIfComplete()
    }

    /// The connection ended: the answer, if a body without a length ended with it, or why
    /// the connection ended too soon.
    package mutating func end() throws -> HTTPResponseData {
        if let answer = try answerIfComplete() { return answer }
        guard let head else {
            throw TCPSocket.failure("the connection closed before the answer's headers ended", .networkConnectionLost)
        }
        if case .untilClose = head.framing {
            return try Self.decoded(status: head.status, headers: head.headers, body: Data(buffer[head.bodyStart...]))
        }
        throw TCPSocket.failure("the connection closed before the answer's body ended", .networkConnectionLost)
    }

    private mutating func answerIfComplete() throws -> HTTPResponseData? {
        while head == nil {
            guard let parsed = try parseHead() else { return nil }
            // An interim answer (100 Continue) precedes the real one: drop it and read on.
            if (100..<200).contains(parsed.status) {
                buffer.removeFirst(parsed.bodyStart)
                continue
            }
            head = parsed
        }
        guard var head else { return nil }
        let body: Data
        switch head.framing {
        case .none:
            body = Data()
        case .length(let length):
            guard buffer.count - head.bodyStart >= length else { return nil }
            body = Data(buffer[head.bodyStart..<(head.bodyStart + length)])
        case .chunked(var chunks):
            let done = try chunks.consume(buffer, from: head.bodyStart)
            head.framing = .chunked(chunks)
            self.head = head
            guard done else { return nil }
            body = chunks.body
        case .untilClose:
            return nil
        }
        return try Self.decoded(status: head.status, headers: head.headers, body: body)
    }

    private func parseHead() throws -> Head? {
        guard let end = UpgradeParser.headEnd(buffer) else {
            guard buffer.count < 65_536 else {
                throw RoboscopeError.malformedResponse("an answer's headers longer than 64 KiB")
            }
            return nil
        }
        let lines = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines[0].split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]),
            (100...599).contains(status)
        else {
            throw RoboscopeError.malformedResponse("not an HTTP/1.1 status line: \(lines[0].prefix(80))")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else {
                throw RoboscopeError.malformedResponse("a header line without a colon: \(line.prefix(80))")
            }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            // Repeated headers fold into one, comma-separated (RFC 9110, 5.3).
            if let existing = headers.first(where: { $0.key.caseInsensitiveCompare(name) == .orderedSame })?.key {
                headers[existing]! += ", " + value
            } else {
                headers[name] = value
            }
        }
        let answer = HTTPResponseData(status: status, headers: headers)
        let framing: Framing
        if bodyless || status == 204 || status == 304 || (100..<200).contains(status) {
            framing = .none
        } else if let coding = answer.header("Transfer-Encoding") {
            guard coding.lowercased().split(separator: ",").last?.trimmingCharacters(in: .whitespaces) == "chunked"
            else {
                throw RoboscopeError.malformedResponse("a Transfer-Encoding other than chunked: \(coding)")
            }
            framing = .chunked(ChunkedBody())
        } else if let length = answer.header("Content-Length") {
            guard let count = Int(length), count >= 0 else {
                throw RoboscopeError.malformedResponse("a Content-Length that is not a length: \(length)")
            }
            framing = .length(count)
        } else {
            framing = .untilClose
        }
        return Head(status: status, headers: headers, bodyStart: end + 4, framing: framing)
    }

    /// The answer with its body as the server meant it: a gzip body inflated (the
    /// transport asked for gzip), as URLSession hands it over.
    private static func decoded(status: Int, headers: [String: String], body: Data) throws -> HTTPResponseData {
        var answer = HTTPResponseData(status: status, headers: headers, body: body)
        guard let coding = answer.header("Content-Encoding")?.lowercased(), !body.isEmpty else { return answer }
        switch coding {
        case "gzip", "x-gzip":
            guard let inflated = RequestCompression.gunzip(body) else {
                throw RoboscopeError.malformedResponse("a gzip body that does not inflate")
            }
            answer.body = inflated
            answer.headers = headers.filter {
                $0.key.caseInsensitiveCompare("Content-Encoding") != .orderedSame
                    && $0.key.caseInsensitiveCompare("Content-Length") != .orderedSame
            }
            return answer
        case "identity":
            return answer
        default:
            throw RoboscopeError.malformedResponse("a Content-Encoding the kit did not ask for: \(coding)")
        }
    }
}

/// A chunked body (RFC 9112, 7.1), decoded as its bytes arrive; the trailer is read and
/// dropped.
private struct ChunkedBody {
    var body = Data()
    private enum Step {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailer
    }

    private var step = Step.size
    /// How far into the connection's bytes the decoding got.
    private var position: Int?

    /// Decodes what `bytes` holds past the body's start; true once the body has ended.
    mutating func consume(_ bytes: [UInt8], from start: Int) throws -> Bool {
        var index = position ?? start
        defer { position = index }
        while true {
            switch step {
            case .data(let remaining):
                let available = min(remaining, bytes.count - index)
                guard available > 0 else { return false }
                body.append(contentsOf: bytes[index..<(index + available)])
                index += available
                step = remaining == available ? .dataEnd : .data(remaining: remaining - available)
            case .dataEnd:
                guard bytes.count - index >= 2 else { return false }
                guard bytes[index] == 13, bytes[index + 1] == 10 else {
                    throw RoboscopeError.malformedResponse("a chunk not followed by CRLF")
                }
                index += 2
                step = .size
            case .size, .trailer:
                guard let lineEnd = Self.lineEnd(bytes, from: index) else { return false }
                let line = String(decoding: bytes[index..<lineEnd], as: UTF8.self)
                index = lineEnd + 2
                if case .trailer = step {
                    if line.isEmpty { return true }
                    continue
                }
                let size =
                    line.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                guard let count = Int(size, radix: 16), count >= 0 else {
                    throw RoboscopeError.malformedResponse("a chunk size that is not hexadecimal: \(line.prefix(40))")
                }
                step = count == 0 ? .trailer : .data(remaining: count)
            }
        }
    }

    private static func lineEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= start + 2 else { return nil }
        for index in start..<(bytes.count - 1) where bytes[index] == 13 && bytes[index + 1] == 10 {
            return index
        }
        return nil
    }
}
#endif
