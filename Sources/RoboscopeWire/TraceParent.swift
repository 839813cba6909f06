/// The W3C `traceparent` header (Trace Context, level 1): `00-<trace id>-<parent id>-<flags>`,
/// lowercase hex. A request's is stored with the events it writes and carried on their
/// `event` messages and changes-feed entries, so that a subscriber's copy names the trace
/// of the write that caused it; the kit sends one with every request.
public struct TraceParent: Hashable, Sendable, CustomStringConvertible {
    /// 32 lowercase hex digits, not all zero.
    public let traceID: String
    /// The caller's span: 16 lowercase hex digits, not all zero.
    public let parentID: String
    /// The trace flags; bit 0 is "sampled".
    public let flags: UInt8

    /// A header of version `00` (exactly four fields), or of a later version (the first
    /// four fields read as version `00`'s, as the specification asks); nil for anything
    /// else, version `ff` included.
    public init?(_ header: String) {
        let utf8 = Array(header.utf8)
        guard utf8.count >= 55, utf8[2] == UInt8(ascii: "-"), utf8[35] == UInt8(ascii: "-"),
            utf8[52] == UInt8(ascii: "-")
        else { return nil }
        let version = String(decoding: utf8[0..<2], as: UTF8.self)
        guard Self.isLowerHex(utf8[0..<2]), version != "ff" else { return nil }
        if version == "00" {
            guard utf8.count == 55 else { return nil }
        } else if utf8.count > 55, utf8[55] != UInt8(ascii: "-") {
            return nil
        }
        let trace = utf8[3..<35]
        let parent = utf8[36..<52]
        let flags = utf8[53..<55]
        guard Self.isLowerHex(trace), Self.isLowerHex(parent), Self.isLowerHex(flags),
            trace.contains(where: { $0 != UInt8(ascii: "0") }), parent.contains(where: { $0 != UInt8(ascii: "0") }),
            let flagBits = UInt8(String(decoding: flags, as: UTF8.self), radix: 16)
        else { return nil }
        traceID = String(decoding: trace, as: UTF8.self)
        parentID = String(decoding: parent, as: UTF8.self)
        self.flags = flagBits
    }

    /// A new trace: random ids (never all zero), sampled unless said otherwise.
    public static func random<Generator: RandomNumberGenerator>(
        sampled: Bool = true, using generator: inout Generator
    ) -> TraceParent {
        TraceParent(
            traceID: Hex.encode(nonZeroBytes(16, using: &generator)),
            parentID: Hex.encode(nonZeroBytes(8, using: &generator)),
            flags: sampled ? 1 : 0)
    }

    public static func random(sampled: Bool = true) -> TraceParent {
        var generator = SystemRandomNumberGenerator()
        return random(sampled: sampled, using: &generator)
    }

    private init(traceID: String, parentID: String, flags: UInt8) {
        self.traceID = traceID
        self.parentID = parentID
        self.flags = flags
    }

    public var sampled: Bool { flags & 1 == 1 }

    /// The header as version `00` writes it.
    public var header: String { "00-\(traceID)-\(parentID)-\(Hex.encode([flags]))" }

    public var description: String { header }

    /// The trace id of a well-formed header, else nil.
    public static func traceID(_ header: String?) -> String? {
        header.flatMap(TraceParent.init)?.traceID
    }

    private static func isLowerHex(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.allSatisfy {
            ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f"))
        }
    }

    private static func nonZeroBytes<Generator: RandomNumberGenerator>(
        _ count: Int, using generator: inout Generator
    ) -> [UInt8] {
        while true {
            let bytes = (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            if bytes.contains(where: { $0 != 0 }) { return bytes }
        }
    }
}

extension TraceParent: Codable {
    /// A header string; a malformed one does not decode.
    public init(from decoder: any Decoder) throws {
        let header = try decoder.singleValueContainer().decode(String.self)
        guard let parsed = TraceParent(header) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "not a W3C traceparent"))
        }
        self = parsed
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(header)
    }
}
