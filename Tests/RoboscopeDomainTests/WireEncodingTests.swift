import Foundation
import Testing
@testable import RoboscopeDomain

@Suite struct WireEncodingTests {
    @Test func nullableFieldsArePresentAsNull() throws {
        let now = Timestamp(rfc3339: "2026-11-22T01:24:59.5Z")!
        let marker = Marker(
            id: .random(), workSessionID: .random(), label: nil, p1: Point3(x: 0, y: 0, z: 0),
            p2: Point3(x: 1, y: 0, z: 0),
            p3: Point3(x: 1, y: 0, z: 1), p4: Point3(x: 0, y: 0, z: 1), color: nil, version: 1, meta: [:],
            customProps: [:],
            calibratedData: nil, createdAt: now, updatedAt: now
        )
        let data = Data(MarkerWithDetails(marker: marker, details: nil).jsonBytes(.wire))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        for key in ["label", "color", "calibrated_data", "details"] {
            #expect(object[key] is NSNull, "\(key) should be null")
        }
        #expect(object["created_at"] as? String == "2026-11-22T01:24:59Z")
        #expect(object["p2"] as? [Double] == [1, 0, 0])
    }

    @Test func foundationISO8601DecodesTheWireForm() throws {
        struct Probe: Decodable { let created_at: Date }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let text = Timestamp(microsecondsSinceEpoch: 1_795_000_000_654_321).formatted(.wire)
        let probe = try decoder.decode(Probe.self, from: Data(#"{"created_at":"\#(text)"}"#.utf8))
        #expect(probe.created_at.timeIntervalSince1970 == 1_795_000_000)
    }
}

/// Stored event data rewritten to the REST shape without decoding it.
@Suite struct WireDataTests {
    @Test func topLevelTimestampsBecomeWholeSecondsAndNothingElseChanges() throws {
        let stored =
            #"{"id": "a", "meta": {"created_at": "2026-11-22T01:24:59.123456Z", "note": "x,}{\"y\""}, "#
            + #""label": "2026-11-22T01:24:59.123456Z", "created_at": "2026-11-22T01:24:59.987654Z", "#
            + #""updated_at": "2026-11-22T01:25:00.000001Z", "completed_at": null}"#
        let wire = String(decoding: try WireData.render(Array(stored.utf8)), as: UTF8.self)
        #expect(
            wire
                == #"{"id": "a", "meta": {"created_at": "2026-11-22T01:24:59.123456Z", "note": "x,}{\"y\""}, "#
                + #""label": "2026-11-22T01:24:59.123456Z", "created_at": "2026-11-22T01:24:59Z", "#
                + #""updated_at": "2026-11-22T01:25:00Z", "completed_at": null}"#
        )
    }

    @Test func stringsEndAtTheirOwnQuoteWhateverTheyHold() throws {
        // A string ending in an escaped backslash, a key that ends in `_at` but is no
        // timestamp, an `_at` key shorter than any timestamp key, and a fake one nested.
        let stored =
            #"{"path": "C:\\", "seen_at": "2026-11-22T01:24:59.123456Z", "a_at": "x", "#
            + #""list": [{"updated_at": "2026-11-22T01:24:59.123456Z"}, "]}\\\""], "#
            + #""started_at": "2026-11-22T01:24:59.123456Z"}"#
        let wire = String(decoding: try WireData.render(Array(stored.utf8)), as: UTF8.self)
        #expect(
            wire
                == stored.replacingOccurrences(
                    of: #""started_at": "2026-11-22T01:24:59.123456Z""#, with: #""started_at": "2026-11-22T01:24:59Z""#)
        )
        #expect(throws: WireData.Malformed.self) { try WireData.render(Array(#"{"a": "x\"}"#.utf8)) }
    }

    @Test func writingAppendsAfterWhatIsThere() throws {
        var output = Array("[1,".utf8)
        try WireData.write(Array("{}".utf8), details: .some(nil), to: &output)
        #expect(String(decoding: output, as: UTF8.self) == #"[1,{"details":null}"#)
    }

    @Test func aMarkerGetsItsDetailsOrNull() throws {
        let marker = Array(#"{"id": "m", "created_at": "2026-11-22T01:24:59.500000Z"}"#.utf8)
        let details = Array(#"{"marker_id": "m", "long_size": 3, "created_at": "2026-11-22T01:24:59.500000Z"}"#.utf8)
        let with = try JSONParser.parse(try WireData.render(marker, details: .some(details)))
        #expect(with.objectValue?["details"]?.objectValue?["created_at"] == .string("2026-11-22T01:24:59Z"))
        #expect(with.objectValue?["created_at"] == .string("2026-11-22T01:24:59Z"))
        let without = try JSONParser.parse(try WireData.render(marker, details: .some(nil)))
        #expect(without.objectValue?["details"] == .null)
        #expect(throws: WireData.Malformed.self) { try WireData.render(Array(#"{"id": "unterminated}"#.utf8)) }
        #expect(throws: WireData.Malformed.self) { try WireData.render(Array("[1]".utf8), details: .some(nil)) }
    }

    @Test func theWireFormMatchesWhatTheEntityRendersAsForEveryKind() throws {
        let now = Timestamp(microsecondsSinceEpoch: 1_795_000_000_123_456)
        let space = Space(id: .random(), key: "k", name: "n", version: 1, createdAt: now, updatedAt: now)
        let stored = space.jsonBytes(.storage)
        #expect(try JSONParser.parse(WireData.render(stored)) == JSONParser.parse(space.jsonBytes(.wire)))
    }
}
