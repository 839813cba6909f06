/// Finds values inside JSON text without parsing them, to keep their exact bytes.
enum RawJSON {
    /// The elements of the top-level object's array member `name`, each as written.
    static func elements(ofArray name: String, in bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        let marker = Array("\"\(name)\":".utf8)
        guard let start = firstIndex(of: marker, in: bytes),
            let open = bytes[(start + marker.count)...].firstIndex(of: UInt8(ascii: "["))
        else {
            return []
        }
        var elements: [ArraySlice<UInt8>] = []
        var depth = 0
        var inString = false
        var escaped = false
        var elementStart: Int? = nil
        for index in (open + 1)..<bytes.count {
            let byte = bytes[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                if elementStart == nil { elementStart = index }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                if depth == 0, elementStart == nil { elementStart = index }
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if depth == 0 {
                    if let begin = elementStart { elements.append(bytes[begin..<index]) }
                    return elements
                }
                depth -= 1
            case UInt8(ascii: ","):
                if depth == 0, let begin = elementStart {
                    elements.append(bytes[begin..<index])
                    elementStart = nil
                }
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                break
            default:
                if depth == 0, elementStart == nil { elementStart = index }
            }
        }
        return elements
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        for index in 0...(haystack.count - needle.count) where haystack[index] == needle[0] {
            if Array(haystack[index..<(index + needle.count)]) == needle { return index }
        }
        return nil
    }
}
