/// A UUID, written lowercase, parsed in any case.
public struct EntityID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Canonical lowercase text, `8-4-4-4-12` hex digits.
    public let description: String

    public init?(_ text: String) {
        var text = text
        // Ids arrive canonical almost always (from the database, from our own answers):
        // then the text is kept as it is, and only other cases build a lowered copy.
        let canonical: Bool? = text.withUTF8 { bytes in
            guard bytes.count == 36 else { return nil }
            var lowercase = true
            for (index, byte) in bytes.enumerated() {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard byte == 45 else { return nil }
                    continue
                }
                switch byte {
                case 48...57, 97...102: break
                case 65...70: lowercase = false
                default: return nil
                }
            }
            return lowercase
        }
        switch canonical {
        case nil: return nil
        case true?: description = text
        case false?:
            description = String(decoding: text.utf8.map { (65...70).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
        }
    }

    /// A new random (version 4) id: two draws from the system generator (one
    /// `getrandom` each), formatted through a table.
    public static func random() -> EntityID {
        var generator = SystemRandomNumberGenerator()
        var high = generator.next() as UInt64
        var low = generator.next() as UInt64
        high = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        var text = [UInt8]()
        text.reserveCapacity(36)
        for (index, word) in [high, low].enumerated() {
            for nibble in 0..<16 {
                let position = index * 16 + nibble
                if position == 8 || position == 12 || position == 16 || position == 20 { text.append(45) }
                text.append(hexDigits[Int((word >> UInt64(60 - nibble * 4)) & 0xF)])
            }
        }
        return EntityID(canonical: String(decoding: text, as: UTF8.self))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private init(canonical: String) {
        description = canonical
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
