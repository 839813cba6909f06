/// The W3C `traceparent` header (Trace Context, level 1): `00-<trace id>-<parent id>-<flags>`,
/// lowercase hex. Read only for the trace id that log lines carry.
public enum TraceParent {
    /// The trace id of a well-formed header of version `00`, else nil (all zeros is invalid).
    public static func traceID(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "00", parts[1].utf8.count == 32, parts[2].utf8.count == 16,
            parts[3].utf8.count == 2, parts.allSatisfy({ $0.utf8.allSatisfy(isLowerHex) }),
            parts[1].utf8.contains(where: { $0 != UInt8(ascii: "0") }),
            parts[2].utf8.contains(where: { $0 != UInt8(ascii: "0") })
        else { return nil }
        return String(parts[1])
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
    }
}
