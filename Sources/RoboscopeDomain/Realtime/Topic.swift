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
              let id = EntityID(String(text[text.index(after: colon)...])) else { return nil }
        self.init(kind, id)
    }

    public var description: String { "\(kind.rawValue):\(id)" }
}
