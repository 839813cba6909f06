/// An event's stored data turned into the REST shape by rewriting its text, without
/// decoding it: every event a subscriber or the changes feed receives goes through here,
/// and decoding each into an entity to encode it again took most of a catch-up's time.
///
/// The stored data of a space, work session, marker or details event is the entity's
/// whole state in storage form, so the REST shape differs only in its top-level
/// timestamps (microseconds stored, whole seconds on the wire) and, for a marker, the
/// `details` REST adds. Values inside `meta` and `custom_props` are never touched, even
/// when a string there looks like a timestamp: only top-level members with a timestamp's
/// name are rewritten.
public enum WireData {
    /// The top-level members that hold timestamps, in every entity that has them.
    static let timestampKeys: [[UInt8]] = ["created_at", "updated_at", "started_at", "completed_at"].map { Array($0.utf8) }

    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    /// `stored` (a JSON object as the log holds it) with its top-level timestamps in the
    /// wire form and, when given, a `details` member appended (`details: nil` appends
    /// nothing; pass `.some(nil)` for `"details": null`).
    public static func render(_ stored: [UInt8], details: [UInt8]?? = nil) throws -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(stored.count + (details.flatMap { $0 }?.count ?? 0) + 16)
        try rewrite(stored, into: &output)
        guard let details else { return output }
        guard output.last == UInt8(ascii: "}") else { throw Malformed(description: "stored data is not an object") }
        output.removeLast()
        if output.count > 1 { output.append(UInt8(ascii: ",")) }
        output.append(contentsOf: #""details":"#.utf8)
        if let object = details {
            try rewrite(object, into: &output)
        } else {
            output.append(contentsOf: "null".utf8)
        }
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// Copies a JSON object, rewriting the string values of its top-level timestamp keys
    /// from `…:SS.ffffffZ` to `…:SSZ` (the same whole second `Timestamp` gives). The
    /// bytes between two rewrites are copied as one run.
    static func rewrite(_ bytes: [UInt8], into output: inout [UInt8]) throws {
        guard bytes.first == UInt8(ascii: "{") else { throw Malformed(description: "stored data is not an object") }
        try bytes.withUnsafeBufferPointer { buffer in
            var depth = 0
            var index = 0
            var copied = 0
            var expectingKey = false
            var timestampKey = false
            let count = buffer.count
            while index < count {
                switch buffer[index] {
                case UInt8(ascii: "\""):
                    let end = try stringEnd(buffer, from: index)
                    let content = UnsafeBufferPointer(rebasing: buffer[(index + 1)..<end])
                    if depth == 1 && expectingKey {
                        timestampKey = timestampKeys.contains { $0.elementsEqual(content) }
                        expectingKey = false
                    } else if depth == 1 && timestampKey {
                        if isMicrosecondTimestamp(content) {
                            // The quote and `YYYY-MM-DDTHH:MM:SS`, then `Z"`.
                            output.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[copied..<(index + 20)]))
                            output.append(UInt8(ascii: "Z"))
                            output.append(UInt8(ascii: "\""))
                            copied = end + 1
                        }
                        timestampKey = false
                    }
                    index = end + 1
                    continue
                case UInt8(ascii: "{"):
                    depth += 1
                    if depth == 1 { expectingKey = true }
                case UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    guard depth >= 0 else { throw Malformed(description: "unbalanced stored data") }
                case UInt8(ascii: ","):
                    if depth == 1 {
                        expectingKey = true
                        timestampKey = false
                    }
                default:
                    break
                }
                index += 1
            }
            guard depth == 0 else { throw Malformed(description: "stored data is not an object") }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[copied..<count]))
        }
    }

    /// The index of the quote that closes the string opening at `start`.
    static func stringEnd(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) throws -> Int {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index
            default: index += 1
            }
        }
        throw Malformed(description: "an unterminated string in stored data")
    }

    /// `2026-11-22T01:24:59.123456Z`, the stored form: its first 19 bytes are the wire form's.
    static func isMicrosecondTimestamp(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        text.count == 27 && text[10] == UInt8(ascii: "T") && text[19] == UInt8(ascii: ".") && text[26] == UInt8(ascii: "Z")
    }
}
