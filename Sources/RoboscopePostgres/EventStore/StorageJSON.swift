import Foundation
import RoboscopeDomain

/// JSON as the database stores it: timestamps with microseconds.
enum StorageJSON {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.userInfo[.timestampStyle] = Timestamp.Style.storage
        return encoder
    }

    static func encodeString<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encoder().encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: UnsafeRawBufferPointer) throws -> T {
        try JSONDecoder().decode(type, from: Data(bytes))
    }
}
