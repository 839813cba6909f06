import Foundation
import Testing
@testable import RoboscopeDomain

/// The decoder stored rows and events go through gives what Foundation's JSONDecoder gave.
@Suite struct JSONValueDecoderTests {
    let marker = #"""
        {"id":"11111111-1111-4111-8111-111111111111","work_session_id":"22222222-2222-4222-8222-222222222222",
         "label":"crack \"A\" é","p1":[0,0,1],"p2":[2.5,0,1],"p3":[2,-0.25,4],"p4":[0,0,4e2],"color":null,"version":3,
         "meta":{"n":1,"d":1.5,"big":9007199254740993,"list":[true,null,"x",{"k":[]}]},"custom_props":{},
         "calibrated_data":{"p1":[1,1,1],"p2":[2,2,2],"p3":[3,3,3],"p4":[4,4,4],"center":[2.5,2.5,2.5]},
         "created_at":"2026-11-22T01:24:59.123456Z","updated_at":"2026-11-22T01:25:00Z"}
        """#

    @Test func decodesEntitiesAsFoundationDoes() throws {
        let bytes = Array(marker.utf8)
        let ours = try JSONValueDecoder().decode(Marker.self, from: bytes)
        let foundation = try JSONDecoder().decode(Marker.self, from: Data(bytes))
        #expect(ours == foundation)
        #expect(ours.meta["big"] == .integer(9_007_199_254_740_993))
        #expect(ours.p4.z == 400)
        #expect(ours.calibratedData?.center.x == 2.5)
        let details = #"""
            {"marker_id":"11111111-1111-4111-8111-111111111111","center_location_long":2.5,"center_location_cross":1,
             "left_distance":0,"right_distance":2,"far_distance":4,"near_distance":1,"long_size":3,"cross_size":2,
             "custom_props":{"a":"b"},"created_at":"2026-11-22T01:24:59Z","updated_at":"2026-11-22T01:24:59Z"}
            """#
        #expect(
            try JSONValueDecoder().decode(MarkerDetails.self, from: Array(details.utf8))
                == JSONDecoder().decode(MarkerDetails.self, from: Data(details.utf8)))
    }

    @Test func wrongTypesAndMissingKeysThrow() throws {
        #expect(throws: DecodingError.self) {
            try JSONValueDecoder().decode(Marker.self, from: Array(#"{"id":1}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try JSONValueDecoder().decode(
                Marker.self, from: Array(marker.replacingOccurrences(of: #""version":3"#, with: #""version":"3""#).utf8)
            )
        }
        // A primitive the decoder does not special-case fails instead of recursing.
        #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(Float.self, from: JSONValue.number(1.5)) }
        #expect(
            try JSONValueDecoder().decode([String: JSONValue].self, from: Array(#"{"a":[1,2.5]}"#.utf8))
                == ["a": JSONValue.array([.integer(1), .number(2.5)])])
    }
}
