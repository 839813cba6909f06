/// One stream: its type and the id of the entity it holds.
public struct StreamRef: Hashable, Sendable {
    public var type: StreamType
    public var id: EntityID

    public init(_ type: StreamType, _ id: EntityID) {
        self.type = type
        self.id = id
    }

    /// `marker:8f1d…`, the name used for locks and in messages.
    public var name: String { "\(type.rawValue):\(id)" }
}

/// What an append expects the stream's current version to be.
public enum ExpectedVersion: Hashable, Sendable {
    /// Append whatever the current version is.
    case any
    /// The stream must not exist yet (a create).
    case noStream
    /// The stream must be at exactly this version.
    case exactly(Int64)
}
