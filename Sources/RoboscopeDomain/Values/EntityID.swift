/// A UUID, written lowercase, parsed in any case.
public struct EntityID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Canonical lowercase text, `8-4-4-4-12` hex digits.
    public let description: String

    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return nil }
        var lowered = [UInt8]()
        lowered.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == 45 else { return nil }
                lowered.append(byte)
                continue
            }
            switch byte {
            case 48...57, 97...102: lowered.append(byte)
            case 65...70: lowered.append(byte + 32)
            default: return nil
            }
        }
        description = String(decoding: lowered, as: UTF8.self)
    }

    /// A new random (version 4) id.
    public static func random() -> EntityID {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { byte -> String in
            let text = String(byte, radix: 16)
            return text.count == 1 ? "0" + text : text
        }.joined()
        let chars = Array(hex)
        let text = String(chars[0..<8]) + "-" + String(chars[8..<12]) + "-" + String(chars[12..<16])
            + "-" + String(chars[16..<20]) + "-" + String(chars[20..<32])
        return EntityID(text)!
    }

    public static func < (lhs: EntityID, rhs: EntityID) -> Bool { lhs.description < rhs.description }
}

extension EntityID: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = EntityID(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a UUID: \(text)")
        }
        self = value
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
