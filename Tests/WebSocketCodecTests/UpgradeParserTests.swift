import Foundation
import Testing
import WebSocketCodec

@Suite struct UpgradeParserTests {
    static func head(_ lines: [String]) -> [UInt8] {
        Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    static let valid = [
        "GET /api/v1/ws?x=1 HTTP/1.1", "Host: example", "Upgrade: websocket", "Connection: keep-alive, Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
    ]

    @Test func acceptValueMatchesRFC6455Example() {
        #expect(HandshakeResponse.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func parsesAValidUpgradeAndCountsItsHead() throws {
        var bytes = Self.head(Self.valid)
        let headLength = bytes.count
        bytes.append(contentsOf: [0x81, 0x80])
        guard case .request(let request, let consumed) = UpgradeParser.parse(bytes) else {
            Issue.record("expected a request"); return
        }
        #expect(consumed == headLength)
        #expect(request.path == "/api/v1/ws")
        #expect(request.query == "x=1")
        #expect(request.key == "dGhlIHNhbXBsZSBub25jZQ==")
        let response = String(decoding: HandshakeResponse.switchingProtocols(request), as: UTF8.self)
        #expect(response.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
        #expect(response.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
    }

    @Test func waitsForTheBlankLine() {
        let bytes = Array(Self.head(Self.valid).dropLast(2))
        #expect(UpgradeParser.parse(bytes) == .needMore)
    }

    @Test func refusesAHeadThatNeverEnds() {
        let bytes = Array(repeating: UInt8(ascii: "a"), count: UpgradeParser.maxHeadSize + 1)
        guard case .reject(let rejection) = UpgradeParser.parse(bytes) else {
            Issue.record("expected a rejection"); return
        }
        #expect(rejection.status == 431)
    }

    @Test(arguments: [
        ("Sec-WebSocket-Version: 13", "Sec-WebSocket-Version: 8", 426),
        ("Upgrade: websocket", "Upgrade: h2c", 426),
        ("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Key: c2hvcnQ=", 400),
        ("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Key: not base64 at all!!!!!!", 400),
        ("Connection: keep-alive, Upgrade", "Connection: keep-alive", 400),
        ("GET /api/v1/ws?x=1 HTTP/1.1", "POST /api/v1/ws HTTP/1.1", 405),
        ("GET /api/v1/ws?x=1 HTTP/1.1", "GET /api/v1/ws HTTP/1.0", 400),
        ("GET /api/v1/ws?x=1 HTTP/1.1", "GET http://x/ HTTP/1.1", 400),
        ("Host: example", "Hostless example", 400),
    ])
    func refusesBadUpgrades(replacing line: String, with replacement: String, status: Int) {
        let lines = Self.valid.map { $0 == line ? replacement : $0 }
        guard case .reject(let rejection) = UpgradeParser.parse(Self.head(lines)) else {
            Issue.record("expected \(status) for \(replacement)"); return
        }
        #expect(rejection.status == status)
        let response = String(decoding: HandshakeResponse.rejection(rejection), as: UTF8.self)
        #expect(response.hasPrefix("HTTP/1.1 \(status) "))
        if status == 426 { #expect(response.contains("Sec-WebSocket-Version: 13\r\n")) }
    }

    @Test func base64RoundTripsLengths() {
        #expect(Base64.encode(Array("f".utf8)) == "Zg==")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        #expect(Base64.encode(Array("foo".utf8)) == "Zm9v")
        #expect(Base64.decodedCount("Zg==") == 1)
        #expect(Base64.decodedCount("Zm9v") == 3)
        #expect(Base64.decodedCount("Zm=v") == nil)
        #expect(Base64.decodedCount("Zm9") == nil)
    }

    @Test func rejectionBodiesStayJSONWhateverThePathHolds() throws {
        let message = "no WebSocket endpoint at /a\"b\\c\td"
        let response = HandshakeResponse.rejection(UpgradeRejection(status: 404, message: message))
        let text = String(decoding: response, as: UTF8.self)
        let body = try #require(text.components(separatedBy: "\r\n\r\n").last)
        let json = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: [String: String]]
        #expect(json?["error"]?["message"] == message)
    }
}
