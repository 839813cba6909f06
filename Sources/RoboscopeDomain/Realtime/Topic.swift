/// What a WebSocket client subscribes to: `work_session:<uuid>` (the session, its
/// markers and details, its lock and presence) or `space:<uuid>` (the space and its
/// work sessions).
public struct Topic: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case workSession = "work_session"
        case space
    }

    public var kind: Kind
    public var id: EntityID

    public init(_ kind: Kind, _ id: EntityID) {
        self.kind = kind
        self.id = id
    }

    /// Parses `kind:<uuid>` (the uuid in any case).
    public init?(_ text: String) {
        guard let colon = text.firstIndex(of: ":"),
            let kind = Kind(rawValue: String(text[..<colon])),
            let id = EntityID(String(text[text.index(after: colon)...]))
        else { return nil }
        self.init(kind, id)
    }

    public var description: String { "\(kind.rawValue):\(id)" }
}

extension Topic: JSONWritable {
    /// `"kind:<uuid>"`, written without building the description first.
    public func writeJSON(to writer: inout JSONWriter) {
        writer.plainString { bytes in
            bytes.append(contentsOf: kind.rawValue.utf8)
            bytes.append(UInt8(ascii: ":"))
            bytes.append(contentsOf: id.description.utf8)
        }
    }
}
