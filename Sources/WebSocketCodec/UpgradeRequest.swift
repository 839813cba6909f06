/// An HTTP/1.1 request to open a WebSocket (RFC 6455 section 4.2.1), parsed from the
/// bytes before the first frame.
public struct UpgradeRequest: Equatable, Sendable {
    public var path: String
    public var query: String?
    /// The client's `Sec-WebSocket-Key` (base64 of 16 bytes).
    public var key: String
    /// Header names lowercased; repeated headers joined with ", ".
    public var headers: [String: String]
}

/// Why an upgrade was refused: the HTTP status to answer with.
public struct UpgradeRejection: Equatable, Sendable, Error {
    public var status: Int
    public var message: String

    public init(status: Int, message: String) {
        self.status = status
        self.message = message
    }

    /// 426 carries `Sec-WebSocket-Version: 13` so the client can retry.
    public static func upgradeRequired(_ message: String) -> UpgradeRejection { .init(status: 426, message: message) }
    public static func badRequest(_ message: String) -> UpgradeRejection { .init(status: 400, message: message) }
}

/// Finds and parses the request head. Pure: give it the bytes read so far.
public enum UpgradeParser {
    public enum Result: Equatable, Sendable {
        /// No blank line yet; read more (unless the head passed `maxHeadSize`).
        case needMore
        /// The request and how many bytes its head took (frames may follow).
        case request(UpgradeRequest, consumed: Int)
        case reject(UpgradeRejection)
    }

    public static let maxHeadSize = 8192

    public static func parse(_ bytes: UnsafeRawBufferPointer) -> Result {
        guard let end = headEnd(bytes) else {
            return bytes.count > maxHeadSize
                ? .reject(.init(status: 431, message: "request head over \(maxHeadSize) bytes")) : .needMore
        }
        guard end <= maxHeadSize else {
            return .reject(.init(status: 431, message: "request head over \(maxHeadSize) bytes"))
        }
        // Header values are opaque octets (RFC 9110); decode leniently and check what we use.
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[..<end]), as: UTF8.self)
        switch parseHead(text) {
        case .success(let request): return .request(request, consumed: end + 4)
        case .failure(let rejection): return .reject(rejection)
        }
    }

    public static func headEnd(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBytes { headEnd($0) }
    }

    public static func parse(_ bytes: [UInt8]) -> Result {
        bytes.withUnsafeBytes { parse($0) }
    }

    /// Index of the "\r\n\r\n" that ends an HTTP head (requests and responses alike).
    public static func headEnd(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    static func parseHead(_ text: String) -> Swift.Result<UpgradeRequest, UpgradeRejection> {
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false).makeIterator()
        guard let requestLine = lines.next() else { return .failure(.badRequest("empty request")) }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/") else {
            return .failure(.badRequest("malformed request line"))
        }
        guard parts[2] == "HTTP/1.1" else { return .failure(.badRequest("WebSocket needs HTTP/1.1")) }
        guard parts[0] == "GET" else { return .failure(.init(status: 405, message: "WebSocket upgrades use GET")) }
        var headers: [String: String] = [:]
        while let line = lines.next() {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else {
                return .failure(.badRequest("malformed header line"))
            }
            let name = line[..<colon].lowercased()
            guard !name.contains(where: { $0 == " " || $0 == "\t" }) else {
                return .failure(.badRequest("malformed header name"))
            }
            let value = line[line.index(after: colon)...].trimmingSpaces()
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        guard headers["host"] != nil else { return .failure(.badRequest("missing Host header")) }
        guard let upgrade = headers["upgrade"], upgrade.tokens.contains("websocket") else {
            return .failure(.upgradeRequired("this endpoint only speaks WebSocket: send Upgrade: websocket"))
        }
        guard let connection = headers["connection"], connection.tokens.contains("upgrade") else {
            return .failure(.badRequest("Connection header must include Upgrade"))
        }
        guard let version = headers["sec-websocket-version"], version.tokens.contains("13") else {
            return .failure(.upgradeRequired("unsupported Sec-WebSocket-Version: this server speaks 13"))
        }
        guard let key = headers["sec-websocket-key"], Base64.decodedCount(key) == 16 else {
            return .failure(.badRequest("Sec-WebSocket-Key must be base64 of 16 bytes"))
        }
        let target = parts[1]
        guard target.hasPrefix("/") else { return .failure(.badRequest("request target must be a path")) }
        let question = target.firstIndex(of: "?")
        let path = String(target[..<(question ?? target.endIndex)])
        let query = question.map { String(target[target.index(after: $0)...]) }
        return .success(UpgradeRequest(path: path, query: query, key: key, headers: headers))
    }
}

extension Substring {
    func trimmingSpaces() -> String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}

extension String {
    /// Comma-separated header tokens, lowercased.
    var tokens: [String] {
        split(separator: ",").map { $0.trimmingSpaces().lowercased() }
    }
}
