import Foundation
import Testing
@testable import RoboscopeDomain

@Suite struct WireEncodingTests {
    @Test func nullableFieldsArePresentAsNull() throws {
        let now = Timestamp(rfc3339: "2026-11-22T01:24:59.5Z")!
        let marker = Marker(
            id: .random(), workSessionID: .random(), label: nil, p1: Point3(x: 0, y: 0, z: 0), p2: Point3(x: 1, y: 0, z: 0),
            p3: Point3(x: 1, y: 0, z: 1), p4: Point3(x: 0, y: 0, z: 1), color: nil, version: 1, meta: [:], customProps: [:],
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
