import Foundation
import RoboscopeDomain

/// JSON as the database stores it: timestamps with microseconds.
enum StorageJSON {
    static func encodeString<T: JSONWritable>(_ value: T) -> String {
        String(decoding: value.jsonBytes(.storage), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: UnsafeRawBufferPointer) throws -> T {
        try JSONValueDecoder().decode(type, from: bytes)
    }
}
