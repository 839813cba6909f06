/// Header values read as HTTP reads them (RFC 9110): the optional white space around a
/// value is spaces and tabs (§5.6.3), and tokens (media types, content codings, the
/// `Bearer` scheme) compare with ASCII letters folded. Foundation's
/// `trimmingCharacters(in: .whitespaces)` goes through Unicode character sets for every
/// character: checking one media type that way took 2.5% of the server's CPU on the write
/// path. These read the UTF-8 bytes in place, and are inlinable so that each caller's module
/// specializes them (unspecialized across modules, every byte went through witness tables).
public enum HeaderText {
    /// `value` without the spaces and tabs around it.
    @inlinable
    public static func trimmed(_ value: Substring) -> Substring {
        let bytes = value.utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isSpace(bytes[start]) { bytes.formIndex(after: &start) }
        while start < end {
            let last = bytes.index(before: end)
            guard isSpace(bytes[last]) else { break }
            end = last
        }
        return value[start..<end]
    }

    @inlinable
    public static func trimmed(_ value: String) -> Substring { trimmed(value[...]) }

    /// Whether `value` is `lowercase` with ASCII letters folded; `lowercase` is a token in
    /// lower case (`application/json`, `bearer`).
    @inlinable
    public static func equalsIgnoringCase(_ value: some StringProtocol, _ lowercase: String) -> Bool {
        value.utf8.elementsEqual(lowercase.utf8) { folded($0) == $1 }
    }

    /// Whether `value` starts with `lowercase`, ASCII letters folded.
    @inlinable
    public static func hasPrefixIgnoringCase(_ value: some StringProtocol, _ lowercase: String) -> Bool {
        var bytes = value.utf8.makeIterator()
        for expected in lowercase.utf8 {
            guard let byte = bytes.next(), folded(byte) == expected else { return false }
        }
        return true
    }

    /// `value` with its ASCII letters in lower case and every other character as it is.
    @inlinable
    public static func lowercased(_ value: some StringProtocol) -> String {
        String(decoding: value.utf8.map(folded), as: UTF8.self)
    }

    @usableFromInline
    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    @usableFromInline
    static func folded(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
}
