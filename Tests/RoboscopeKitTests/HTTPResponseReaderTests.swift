import Foundation
import Testing
@testable import RoboscopeKit

#if canImport(Glibc)
/// The socket transport's answer parser (Linux, as the transport is), fed every framing
/// in every split.
@Suite struct HTTPResponseReaderTests {
    /// Feeds `wire` cut at `cuts`, then ends the connection if the answer did not come.
    static func read(
        _ wire: [UInt8], method: String = "GET", cuts: [Int] = [], maximumSize: Int = 1 << 20
    ) throws -> HTTPResponseData {
        var reader = HTTPResponseReader(method: method, maximumSize: maximumSize)
        var start = 0
        for cut in cuts.sorted() + [wire.count] where cut >= start {
            if let answer = try reader.consume(wire[start..<cut]) { return answer }
            start = cut
        }
        return try reader.end()
    }

    /// The answer the same for every place the bytes could be cut in two, and for one byte at a time.
    static func readEverySplit(_ text: String, method: String = "GET") throws -> HTTPResponseData {
        let wire = Array(text.utf8)
        let whole = try read(wire, method: method)
        for cut in 0...wire.count { #expect(try read(wire, method: method, cuts: [cut]) == whole, "cut at \(cut)") }
        #expect(try read(wire, method: method, cuts: Array(0...wire.count)) == whole)
        return whole
    }

    @Test func aContentLengthBodyEndsAtItsLengthWhateverFollows() throws {
        let answer = try Self.readEverySplit("HTTP/1.1 201 Created\r\nContent-Length: 5\r\nETag: \"3\"\r\n\r\nhello")
        #expect(answer.status == 201)
        #expect(answer.body == Data("hello".utf8))
        #expect(answer.header("etag") == "\"3\"")
        // Bytes past the length are not part of it (and do not wait for the close).
        var reader = HTTPResponseReader(method: "GET")
        #expect(
            try reader.consume(Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA".utf8))?.body
                == Data("ok".utf8))
    }

    @Test func aChunkedBodyIsJoinedAndItsTrailerDropped() throws {
        let answer = try Self.readEverySplit(
            """
            HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1A\r\n \
            abcdefghijklmnopqrstuvwxy\r\n0\r\nX-Trailer: 1\r\n\r\n
            """
        )
        #expect(answer.body == Data("hello abcdefghijklmnopqrstuvwxy".utf8))
    }

    @Test func aBodyWithoutALengthEndsWithTheConnection() throws {
        let answer = try Self.readEverySplit("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it")
        #expect(answer.body == Data("all of it".utf8))
    }

    @Test func headAndNoContentAnswersHaveNoBody() throws {
        #expect(try Self.readEverySplit("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", method: "HEAD").body.isEmpty)
        #expect(try Self.readEverySplit("HTTP/1.1 204 No Content\r\n\r\n").status == 204)
    }

    @Test func anInterimAnswerIsSkipped() throws {
        let answer = try Self.readEverySplit(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        #expect(answer.status == 200)
        #expect(answer.body == Data("ok".utf8))
    }

    @Test func repeatedHeadersFoldIntoOne() throws {
        let answer = try Self.read(
            Array("HTTP/1.1 200 OK\r\nVary: Accept\r\nvary: Accept-Encoding\r\nContent-Length: 0\r\n\r\n".utf8))
        #expect(answer.header("Vary") == "Accept, Accept-Encoding")
    }

    @Test func aGzipBodyArrivesInflated() throws {
        let json = Data(String(repeating: "{\"label\":\"marker\"},", count: 200).utf8)
        let gzip = try #require(RequestCompression.gzip(json))
        let head = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(gzip.count)\r\n\r\n"
        let answer = try Self.read(Array(head.utf8) + Array(gzip), cuts: [10, head.utf8.count + 7])
        #expect(answer.body == json)
        #expect(answer.header("Content-Encoding") == nil)
        #expect(answer.header("Content-Length") == nil)
    }

    @Test func everyBrokenAnswerFailsWithAReason() throws {
        func failure(_ text: String, maximumSize: Int = 1 << 20) -> RoboscopeError? {
            do {
                _ = try Self.read(Array(text.utf8), maximumSize: maximumSize)
                return nil
            } catch let error as RoboscopeError {
                return error
            } catch {
                return .malformedResponse("\(error)")
            }
        }
        func isLost(_ error: RoboscopeError?) -> Bool {
            if case .transport(let failure)? = error { return failure.urlError?.code == .networkConnectionLost }
            return false
        }
        func isMalformed(_ error: RoboscopeError?) -> Bool {
            if case .malformedResponse? = error { return true }
            return false
        }
        // Cut off: the request may have been applied, so it is a network failure, retried with its key.
        #expect(isLost(failure("")))
        #expect(isLost(failure("HTTP/1.1 200 OK\r\nContent-Le")))
        #expect(isLost(failure("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")))
        #expect(isLost(failure("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel")))
        // Not HTTP, or not what was asked for.
        #expect(isMalformed(failure("SSH-2.0-OpenSSH\r\n\r\n")))
        #expect(isMalformed(failure("HTTP/1.1 2x0 OK\r\n\r\n")))
        #expect(isMalformed(failure("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n")))
        #expect(isMalformed(failure("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n")))
        #expect(isMalformed(failure("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n")))
        #expect(isMalformed(failure("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")))
        #expect(isMalformed(failure("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX")))
        #expect(isMalformed(failure("HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 2\r\n\r\nok")))
        #expect(isMalformed(failure("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\nok")))
        // Bounded: a server cannot make the kit hold more than it accepts.
        #expect(
            isMalformed(failure("HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "x", count: 2000), maximumSize: 1000)))
        #expect(isMalformed(failure("HTTP/1.1 200 OK\r\nX: " + String(repeating: "x", count: 70_000))))
    }

    @Test func theRequestHeadFramesTheBodyAndRefusesLineBreaks() throws {
        let request = HTTPRequestData(
            method: "POST", url: URL(string: "http://example.test:8080/api/v1/spaces?x=1")!,
            headers: ["Content-Type": "application/json", "Content-Length": "999"], body: Data("{}".utf8))
        let head = String(
            decoding: try SocketHTTPTransport.head(of: request, host: "example.test", acceptsCompression: true),
            as: UTF8.self)
        #expect(head.hasPrefix("POST /api/v1/spaces?x=1 HTTP/1.1\r\nHost: example.test:8080\r\nConnection: close\r\n"))
        #expect(head.contains("\r\nContent-Length: 2\r\n"))
        #expect(!head.contains("999"))
        #expect(head.contains("\r\nAccept-Encoding: gzip\r\n"))
        #expect(head.hasSuffix("\r\n\r\n"))
        let emptyPost = HTTPRequestData(method: "POST", url: URL(string: "http://h/x")!)
        #expect(
            String(
                decoding: try SocketHTTPTransport.head(of: emptyPost, host: "h", acceptsCompression: false),
                as: UTF8.self)
                == "POST /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
        let injected = HTTPRequestData(
            method: "GET", url: URL(string: "http://h/")!, headers: ["X-User-Id": "ana\r\nX-Admin: 1"])
        #expect(throws: RoboscopeError.self) {
            try SocketHTTPTransport.head(of: injected, host: "h", acceptsCompression: true)
        }
    }

    /// The WebSocket upgrade follows the same rule: refused before any connection (the
    /// port is closed, so a header dropped and a connect tried would fail otherwise).
    @Test func theWebSocketUpgradeRefusesLineBreaksBeforeConnecting() async throws {
        await #expect(
            throws: RoboscopeError.badRequest(field: "X-User-Id", message: "a header name or value with a line break")
        ) {
            _ = try await SocketWebSocketTransport().connect(
                to: URL(string: "ws://127.0.0.1:9/api/v1/ws")!,
                headers: ["X-User-Id": "ana\r\nX-Admin: 1"])
        }
    }
}
#endif
