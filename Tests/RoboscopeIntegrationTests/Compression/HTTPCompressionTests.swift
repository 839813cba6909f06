import CompressNIO
import Foundation
import NIOCore
import RoboscopeDomain
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// gzip and deflate on HTTP, over real sockets and read as bytes: answers compressed for
/// clients that accept it (a streamed long poll still streamed), `Vary` on every
/// compressible answer, and request bodies inflated under the body limit.
@Suite struct HTTPCompressionTests {
    static let server = LazyServer("compression") { ["--body-limit", "65536"] }

    /// One exchange on its own connection, read as bytes until the server closes it.
    struct RawReply {
        let status: Int
        let headers: [String: String]
        let body: [UInt8]

        func header(_ name: String) -> String? { headers[name.lowercased()] }

        func inflated() throws -> [UInt8] {
            var buffer = ByteBuffer(bytes: body)
            switch header("Content-Encoding") {
            case "gzip"?: return Array(try buffer.decompress(with: .gzip()).readableBytesView)
            case "deflate"?: return Array(try buffer.decompress(with: .zlib()).readableBytesView)
            default: return body
            }
        }
    }

    /// One exchange, its blocking socket calls on a thread of their own: a long poll held
    /// on the cooperative pool (two threads) starved every other suite of the process.
    static func exchange(
        _ port: Int, _ method: String, _ path: String, headers: [String] = [], body: [UInt8] = []
    ) async throws -> RawReply {
        try await onOwnThread { try blockingExchange(port, method, path, headers: headers, body: body) }
    }

    static func blockingExchange(
        _ port: Int, _ method: String, _ path: String, headers: [String], body: [UInt8]
    ) throws -> RawReply {
        let socket = try WebSocketClient.connect(port: port)
        defer { close(socket) }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-User-Id: gz\r\n"
        head += headers.map { $0 + "\r\n" }.joined()
        if !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        guard let end = bytes.firstRange(of: [13, 10, 13, 10]) else { throw TestFailure("no answer head") }
        let lines = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields[name] = fields[name].map { $0 + ", " + value } ?? value
        }
        var rest = Array(bytes[end.upperBound...])
        if fields["transfer-encoding"]?.contains("chunked") == true { rest = try dechunk(rest) }
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        return RawReply(status: status, headers: fields, body: rest)
    }

    static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while let lineEnd = bytes[index...].firstRange(of: [13, 10])?.lowerBound {
            guard let size = Int(String(decoding: bytes[index..<lineEnd], as: UTF8.self), radix: 16) else {
                throw TestFailure("bad chunk")
            }
            if size == 0 { return out }
            out += bytes[(lineEnd + 2)..<(lineEnd + 2 + size)]
            index = lineEnd + 2 + size + 2
        }
        return out
    }

    static func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
        var buffer = ByteBuffer(bytes: bytes)
        return Array(try buffer.compress(with: .gzip()).readableBytesView)
    }

    /// A session with `count` markers; its id.
    static func session(_ server: ServerProcess, markers count: Int) async throws -> String {
        let space = try await server.client.post("/api/v1/spaces", ["key": .string("gz-\(UUID())"), "name": "n"])
        let session = try await server.client.post("/api/v1/work-sessions", ["space_id": space.json["id"]!])
        let id = try #require(session.json["id"]?.string)
        let markers = (0..<count).map { index in
            """
            {\"work_session_id\":\"\(id)\",\"label\":\"marker \(index) of a compression \
            test\",\"p1\":[0,0,1],\"p2\":[2,0,1],\"p3\":[2,0,4],\"p4\":[0,0,4]}
            """
        }
        let bulk = try await server.client.send(
            "POST", "/api/v1/markers/bulk", body: Data("{\"markers\":[\(markers.joined(separator: ","))]}".utf8))
        #expect(bulk.status == 201)
        return id
    }

    @Test func aListIsCompressedForAClientThatAcceptsItAndSaysVary() async throws {
        let server = try await Self.server.get().server
        let session = try await Self.session(server, markers: 50)
        let path = "/api/v1/markers?work_session_id=\(session)"
        let plain = try await Self.exchange(server.port, "GET", path)
        #expect(plain.header("Content-Encoding") == nil)
        #expect(plain.header("Vary")?.contains("Accept-Encoding") == true)
        for (coding, name) in [("gzip", "gzip"), ("deflate", "deflate"), ("br;q=1, gzip;q=0.5", "gzip"), ("*", "gzip")]
        {
            let packed = try await Self.exchange(server.port, "GET", path, headers: ["Accept-Encoding: \(coding)"])
            #expect(packed.status == 200)
            #expect(packed.header("Content-Encoding") == name, "\(coding)")
            #expect(packed.header("Vary")?.contains("Accept-Encoding") == true)
            #expect(Int(packed.header("Content-Length") ?? "") == packed.body.count)
            #expect(try packed.inflated() == plain.body, "the same JSON, \(coding)")
            #expect(
                packed.body.count * 4 < plain.body.count, "\(coding): \(packed.body.count) of \(plain.body.count) bytes"
            )
        }
        let refused = try await Self.exchange(
            server.port, "GET", path, headers: ["Accept-Encoding: gzip;q=0, identity"])
        #expect(refused.header("Content-Encoding") == nil)
    }

    @Test func aSmallAnswerIsSentAsItIs() async throws {
        let server = try await Self.server.get().server
        let reply = try await Self.exchange(server.port, "GET", "/api/v1/realtime", headers: ["Accept-Encoding: gzip"])
        #expect(reply.status == 200)
        #expect(reply.header("Content-Encoding") == nil)
    }

    /// A long poll answered compressed: the streamed page arrives when the event does
    /// (flushed, not held until the poll's end) and inflates to the page.
    @Test func aLongPollStaysStreamedWhenCompressed() async throws {
        let server = try await Self.server.get().server
        let session = try await Self.session(server, markers: 1)
        let head = try await Self.exchange(server.port, "GET", "/api/v1/changes?topic=work_session:\(session)&since=0")
        let since = try #require(try JSONParser.parse(head.body)["next_since"]?.int)
        let port = server.port
        let poll = Task {
            try await Self.exchange(
                port, "GET", "/api/v1/changes?topic=work_session:\(session)&since=\(since)&wait=30",
                headers: ["Accept-Encoding: gzip"])
        }
        try await eventually("the poll is waiting") { try await server.metric("roboscope_changes_waiting") == 1 }
        let started = ContinuousClock.now
        _ = try await server.client.post(
            "/api/v1/markers", Fixtures.markerBody(session: session, ["label": "wakes the poll"]))
        let reply = try await poll.value
        #expect(
            ContinuousClock.now - started < .seconds(20), "answered when the event came, not at the poll's 30 s end")
        #expect(reply.header("Content-Encoding") == "gzip")
        let page = try JSONParser.parse(try reply.inflated())
        #expect(page["data"]?.array?.isEmpty == false)
    }

    @Test func aGzippedBulkUploadIsAccepted() async throws {
        let server = try await Self.server.get().server
        let session = try await Self.session(server, markers: 0)
        let markers = (0..<100).map { index in
            """
            {\"work_session_id\":\"\(session)\",\"label\":\"uploaded \
            \(index)\",\"p1\":[0,0,1],\"p2\":[2,0,1],\"p3\":[2,0,4],\"p4\":[0,0,4]}
            """
        }
        let body = Array("{\"markers\":[\(markers.joined(separator: ","))]}".utf8)
        let reply = try await Self.exchange(
            server.port, "POST", "/api/v1/markers/bulk",
            headers: ["Content-Type: application/json", "Content-Encoding: gzip", "Idempotency-Key: gz-\(UUID())"],
            body: try Self.gzip(body))
        #expect(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
        let list = try await server.client.get("/api/v1/markers?work_session_id=\(session)&limit=500")
        #expect(list.json.array?.count == 100)
    }

    /// 10 MB of zeros gzip to about 10 KB: refused at the limit (64 KiB here) as 413,
    /// never inflated whole; a corrupt stream is 400 and an unknown coding 415, each
    /// naming the header.
    @Test func aBombACorruptStreamAndAnUnknownCodingAreRefused() async throws {
        let server = try await Self.server.get().server
        let bomb = try Self.gzip([UInt8](repeating: 0x20, count: 10_000_000))
        #expect(bomb.count < 65_536)
        let big = try await Self.exchange(
            server.port, "POST", "/api/v1/spaces",
            headers: ["Content-Type: application/json", "Content-Encoding: gzip"], body: bomb)
        #expect(big.status == 413)
        let corrupt = try await Self.exchange(
            server.port, "POST", "/api/v1/spaces",
            headers: ["Content-Type: application/json", "Content-Encoding: gzip"],
            body: Array("not gzip at all".utf8))
        #expect(corrupt.status == 400)
        #expect(String(decoding: corrupt.body, as: UTF8.self).contains("Content-Encoding"))
        let unknown = try await Self.exchange(
            server.port, "POST", "/api/v1/spaces",
            headers: ["Content-Type: application/json", "Content-Encoding: br"], body: Array("{}".utf8))
        #expect(unknown.status == 415)
        #expect(String(decoding: unknown.body, as: UTF8.self).contains("Content-Encoding"))
        // The service is fine afterwards.
        #expect(try await server.client.get("/readyz").status == 200)
    }
}
