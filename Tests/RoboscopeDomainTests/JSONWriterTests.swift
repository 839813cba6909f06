import Foundation
import Testing
@testable import RoboscopeDomain

@Suite struct JSONWriterTests {
    @Test func roundTripsThroughTheParser() throws {
        let value: JSONValue = .object([
            "text": .string("quote \" backslash \\ newline \n tab \t bell \u{07} é 😀"),
            "numbers": .array([.integer(-5), .number(0.1), .number(-0.0), .number(1e300), .number(2.5e-8), .number(3)]),
            "flags": .array([.bool(true), .bool(false), .null]),
            "nested": .object(["empty": .object([:]), "list": .array([])]),
        ])
        let bytes = value.jsonBytes(.wire)
        let parsed = try JSONParser.parse(bytes)
        #expect(parsed["text"] == value["text"])
        #expect(parsed["flags"] == value["flags"])
        #expect(parsed["nested"] == value["nested"])
        let numbers = try #require(parsed["numbers"]?.arrayValue)
        #expect(numbers.map(\.doubleValue) == [-5, 0.1, -0.0, 1e300, 2.5e-8, 3])
        #expect(try JSONSerialization.jsonObject(with: Data(bytes)) is [String: Any])
    }

    @Test func nonFiniteNumbersBecomeNull() {
        #expect(String(decoding: JSONValue.number(.infinity).jsonBytes(.wire), as: UTF8.self) == "null")
    }

    @Test func entityIDsAreVersion4() {
        for _ in 0..<100 {
            let id = EntityID.random().description
            #expect(EntityID(id)?.description == id)
            #expect(Array(id)[14] == "4")
            #expect("89ab".contains(Array(id)[19]))
        }
    }
}

extension JSONValue {
    subscript(key: String) -> JSONValue? { objectValue?[key] }
    var arrayValue: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }
}
