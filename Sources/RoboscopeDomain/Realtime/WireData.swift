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
    static let timestampKeys: [[UInt8]] = ["created_at", "updated_at", "started_at", "completed_at"].map {
        Array($0.utf8)
    }

    public struct Malformed: Error, CustomStringConvertible {
        public let description: String
    }

    /// `stored` (a JSON object as the log holds it) with its top-level timestamps in the
    /// wire form and, when given, a `details` member appended (`details: nil` appends
    /// nothing; pass `.some(nil)` for `"details": null`).
    public static func render(_ stored: [UInt8], details: [UInt8]?? = nil) throws -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(stored.count + (details.flatMap { $0 }?.count ?? 0) + 16)
        try write(stored, details: details, to: &output)
        return output
    }

    /// `render(stored, details:)` appended to `output`.
    public static func write(_ stored: [UInt8], details: [UInt8]?? = nil, to output: inout [UInt8]) throws {
        let start = output.count
        try rewrite(stored, into: &output)
        guard let details else { return }
        guard output.last == UInt8(ascii: "}") else { throw Malformed(description: "stored data is not an object") }
        output.removeLast()
        if output.count > start + 1 { output.append(UInt8(ascii: ",")) }
        output.append(contentsOf: #""details":"#.utf8)
        if let object = details {
            try rewrite(object, into: &output)
        } else {
            output.append(contentsOf: "null".utf8)
        }
        output.append(UInt8(ascii: "}"))
    }

    /// Copies a JSON object, rewriting the string values of its top-level timestamp keys
    /// from `…:SS.ffffffZ` to `…:SSZ` (the same whole second `Timestamp` gives). The
    /// bytes between two rewrites are copied as one run.
    ///
    /// Every event a subscriber or a catch-up receives passes through here, so the scan
    /// skips the bytes that cannot change its state (most of them) in a tight loop, and
    /// rules out most keys by their length and ending before comparing them.
    static func rewrite(_ bytes: [UInt8], into output: inout [UInt8]) throws {
        guard bytes.first == UInt8(ascii: "{") else { throw Malformed(description: "stored data is not an object") }
        // The table is read once: a static read inside the loop cost a lazy-init check per byte.
        try structural.withUnsafeBufferPointer { structural in
            try bytes.withUnsafeBufferPointer { buffer in
                let base = buffer.baseAddress!
                let count = buffer.count
                var depth = 0
                var index = 0
                var copied = 0
                var expectingKey = false
                var timestampKey = false
                while true {
                    while index < count, structural[Int(base[index])] == 0 { index += 1 }
                    guard index < count else { break }
                    switch base[index] {
                    case UInt8(ascii: "\""):
                        let end = try stringEnd(buffer, from: index)
                        if depth == 1 && expectingKey {
                            timestampKey = isTimestampKey(
                                UnsafeBufferPointer(start: base + index + 1, count: end - index - 1))
                            expectingKey = false
                        } else if depth == 1 && timestampKey {
                            if isMicrosecondTimestamp(
                                UnsafeBufferPointer(start: base + index + 1, count: end - index - 1))
                            {
                                // The quote and `YYYY-MM-DDTHH:MM:SS`, then `Z"`.
                                output.append(
                                    contentsOf: UnsafeBufferPointer(start: base + copied, count: index + 20 - copied))
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
                    default:  // ","
                        if depth == 1 {
                            expectingKey = true
                            timestampKey = false
                        }
                    }
                    index += 1
                }
                guard depth == 0 else { throw Malformed(description: "stored data is not an object") }
                output.append(contentsOf: UnsafeBufferPointer(start: base + copied, count: count - copied))
            }
        }
    }

    /// 1 for the bytes that change the scan's state: quotes, brackets and commas.
    private static let structural: [UInt8] = (0...255).map { byte in
        "\"{}[],".utf8.contains(UInt8(byte)) ? 1 : 0
    }

    static func isTimestampKey(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        // Every timestamp key ends in `_at`: most keys are ruled out before a comparison.
        guard key.count >= 10, key[key.count - 1] == UInt8(ascii: "t"), key[key.count - 3] == UInt8(ascii: "_") else {
            return false
        }
        return timestampKeys.contains { $0.elementsEqual(key) }
    }

    /// The index of the quote that closes the string opening at `start`.
    static func stringEnd(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) throws -> Int {
        let base = bytes.baseAddress!
        let count = bytes.count
        var index = start + 1
        while index < count {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") { return index }
            index += byte == UInt8(ascii: "\\") ? 2 : 1
        }
        throw Malformed(description: "an unterminated string in stored data")
    }

    /// `2026-11-22T01:24:59.123456Z`, the stored form: its first 19 bytes are the wire form's.
    static func isMicrosecondTimestamp(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        text.count == 27 && text[10] == UInt8(ascii: "T") && text[19] == UInt8(ascii: ".")
            && text[26] == UInt8(ascii: "Z")
    }
}
