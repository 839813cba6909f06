import Foundation
import Testing
@testable import RoboscopeDomain

@Suite struct JSONParserTests {
    func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(Array(text.utf8)) }

    @Test func parsesEveryKind() throws {
        let value = try parse(
            #" {"a": [1, -2.5, 1e2, true, false, null], "b": {"c": "d\n\u00e9\ud83d\ude00"}, "e": 9007199254740993} "#)
        #expect(
            value
                == .object([
                    "a": .array([.integer(1), .number(-2.5), .number(100), .bool(true), .bool(false), .null]),
                    "b": .object(["c": .string("d\né😀")]),
                    "e": .integer(9_007_199_254_740_993),
                ]))
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", ".5", "1e", "\"abc", "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"",
        "tru", "nul", "{\"a\" 1}", "[1 2]", "1 2", "\"a\u{01}b\"", "{1:2}",
    ])
    func refusesMalformed(_ text: String) {
        #expect(throws: JSONParser.Failure.self) { try parse(text) }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22, 0xFF, 0xFE, 0x22]) }
    }

    @Test func refusesDeepNesting() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParser.Failure.self) { try parse(deep) }
        let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: Never.self) { try parse(fine) }
    }

    @Test func agreesWithFoundationOnNumbers() throws {
        for text in [
            "0.1", "-0.0", "1.7976931348623157e308", "5e-324", "123456789.123456789", "-9223372036854775808",
            "9223372036854775808",
        ] {
            let ours = try parse(text).doubleValue
            let theirs = try JSONDecoder().decode(Double.self, from: Data(text.utf8))
            #expect(ours == theirs, "\(text)")
        }
        #expect(try parse("1e400") == .number(.infinity))
    }
}

@Suite struct JSONValueDecodingTests {
    @Test func decodableKeepsEveryKindApart() throws {
        let text = #"{"t": true, "f": false, "i": 3, "d": 2.5, "s": "x", "n": null, "a": [1, "b"], "o": {}}"#
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(value == (try JSONParser.parse(Array(text.utf8))))
    }
}
