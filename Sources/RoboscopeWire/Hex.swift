/// Lower-case hex, as digests travel.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        decode(digits: Array(text.utf8))
    }

    /// The bytes of hex `digits` read in place (a database cell's, with no `String` made).
    /// Inlinable, so that each caller's module specializes it for its collection: called
    /// across modules unspecialized, every digit went through witness tables, and reading
    /// the 32-byte hashes an append returns took 4.6% of the server's CPU on the write
    /// path (8.3% with signing, whose checkpointer reads every new leaf's).
    @inlinable
    public static func decode<Digits: RandomAccessCollection>(digits: Digits) -> [UInt8]?
    where Digits.Element == UInt8 {
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index != digits.endIndex {
            let next = digits.index(after: index)
            guard let high = value(digits[index]), let low = value(digits[next]) else { return nil }
            bytes.append(high << 4 | low)
            index = digits.index(after: next)
        }
        return bytes
    }

    @inlinable
    static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
