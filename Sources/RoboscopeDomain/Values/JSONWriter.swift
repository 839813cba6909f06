/// Writes JSON bytes for the service's own types, without `Encodable`'s boxing:
/// encoding 2,000 events through `JSONEncoder` took most of a bulk request's time.
///
/// Nullable fields are always written (as `null`), never left out.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// How timestamps are written: whole seconds on the wire, microseconds in storage.
    public let timestampStyle: Timestamp.Style
    private var needsComma = false

    public init(timestampStyle: Timestamp.Style, capacity: Int = 1024) {
        self.timestampStyle = timestampStyle
        bytes.reserveCapacity(capacity)
    }

    // MARK: Structure

    public mutating func object(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Inlinable, as are the generic writers below, so that the module that calls them
    /// specializes them for its own sequences and types: called across modules
    /// unspecialized (the append's batch is written in RoboscopePostgres), every element
    /// went through witness tables and metadata look-ups.
    @inlinable
    public mutating func array<S: Sequence>(_ items: S, _ element: (inout JSONWriter, S.Element) -> Void) {
        openArray()
        for item in items { element(&self, item) }
        closeArray()
    }

    @usableFromInline
    mutating func openArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    @usableFromInline
    mutating func closeArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes `"name":` inside an object; the value follows.
    public mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        needsComma = false
    }

    public mutating func key(_ name: String) {
        writeString(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    // MARK: Values

    /// Writes a value already rendered as JSON (a message rendered once for many readers).
    public mutating func raw(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
        needsComma = true
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        needsComma = true
    }

    public mutating func value(_ text: String) {
        writeString(text)
        needsComma = true
    }

    public mutating func value(_ flag: Bool) {
        separate()
        bytes.append(contentsOf: flag ? Self.trueText : Self.falseText)
        needsComma = true
    }

    public mutating func value(_ number: Int64) {
        separate()
        appendDigits(number)
        needsComma = true
    }

    /// Integral doubles are written without a fraction (`2`, not `2.0`), others in the
    /// shortest form that reads back as the same double.
    public mutating func value(_ number: Double) {
        guard number.isFinite else { return null() }
        separate()
        if number == 0 {
            bytes.append(contentsOf: number.sign == .minus ? Array("-0".utf8) : [UInt8(ascii: "0")])
        } else if number == number.rounded(), abs(number) < 1e15 {
            appendDigits(Int64(number))
        } else {
            bytes.append(contentsOf: number.description.utf8)
        }
        needsComma = true
    }

    public mutating func value(_ id: EntityID) { value(id.description) }

    public mutating func value(_ time: Timestamp) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        time.write(timestampStyle, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// Writes a value whose JSON `body` appends itself (rendered straight into this
    /// writer's bytes, not built apart and copied in).
    mutating func rawValue(_ body: (inout [UInt8]) throws -> Void) rethrows {
        separate()
        try body(&bytes)
        needsComma = true
    }

    /// Writes a string whose text `body` appends, unescaped: only for text that can
    /// hold nothing JSON escapes (ids, names of kinds).
    mutating func plainString(_ body: (inout [UInt8]) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        body(&bytes)
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    @inlinable
    public mutating func value<T: JSONWritable>(_ item: T) { item.writeJSON(to: &self) }

    @inlinable
    public mutating func value<T: JSONWritable>(_ item: T?) {
        if let item { item.writeJSON(to: &self) } else { null() }
    }

    public mutating func value(_ text: String?) {
        if let text { value(text) } else { null() }
    }

    public mutating func value(_ time: Timestamp?) {
        if let time { value(time) } else { null() }
    }

    public mutating func value(_ number: Int64?) {
        if let number { value(number) } else { null() }
    }

    // MARK: Plumbing

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)
    private static let trueText: [UInt8] = Array("true".utf8)
    private static let falseText: [UInt8] = Array("false".utf8)

    /// The decimal digits of `number`, written in place (no string between).
    private mutating func appendDigits(_ number: Int64) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        // The magnitude as unsigned, so Int64.min has one too.
        var rest = number.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(48 + rest % 10)
                rest /= 10
            } while rest > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start..<20]))
        }
    }

    private mutating func writeString(_ text: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        var text = text
        // Native strings are contiguous UTF-8: scan and copy the buffer, not the view.
        text.withUTF8 { utf8 in
            // Most strings (ids, keys, labels) need no escaping: copy them whole.
            if !utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
                bytes.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
                case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                case 0..<0x20:
                    bytes.append(contentsOf: [
                        0x5C, UInt8(ascii: "u"), 0x30, 0x30, Self.hex[Int(byte >> 4)], Self.hex[Int(byte & 0xF)],
                    ])
                default: bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// A value that writes itself as JSON.
public protocol JSONWritable {
    func writeJSON(to writer: inout JSONWriter)
}

extension JSONWritable {
    /// The value as JSON bytes in the given timestamp style.
    @inlinable
    public func jsonBytes(_ style: Timestamp.Style) -> [UInt8] {
        var writer = JSONWriter(timestampStyle: style)
        writeJSON(to: &writer)
        return writer.bytes
    }
}

extension Array: JSONWritable where Element: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.array(self) { $0.value($1) }
    }
}

extension JSONValue: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        switch self {
        case .null: writer.null()
        case .bool(let flag): writer.value(flag)
        case .integer(let number): writer.value(number)
        case .number(let number): writer.value(number)
        case .string(let text): writer.value(text)
        case .array(let items): writer.array(items) { $0.value($1) }
        case .object(let members):
            writer.object { writer in
                for (name, member) in members {
                    writer.key(name)
                    writer.value(member)
                }
            }
        }
    }
}

extension JSONValue {
    /// One text per value, whatever order its object members came in: keys sorted
    /// (by their UTF-8 bytes) at every level. Two requests with the same JSON compare equal.
    public var canonicalJSON: [UInt8] {
        var writer = JSONWriter(timestampStyle: .wire)
        Self.writeCanonical(self, to: &writer)
        return writer.bytes
    }

    private static func writeCanonical(_ value: JSONValue, to writer: inout JSONWriter) {
        switch value {
        case .array(let items):
            writer.array(items) { writeCanonical($1, to: &$0) }
        case .object(let members):
            writer.object { writer in
                for name in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                    writer.key(name)
                    writeCanonical(members[name]!, to: &writer)
                }
            }
        default:
            writer.value(value)
        }
    }
}

extension Point3: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.array([x, y, z]) { $0.value($1) }
    }
}
