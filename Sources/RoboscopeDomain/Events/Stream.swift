/// The kinds of stream in the event log; each entity is one stream.
public enum StreamType: String, Sendable, CaseIterable, Codable {
    case space
    case workSession = "work_session"
    case marker
    case markerDetails = "marker_details"
    /// Lock acquisitions and releases of one work session (audit only).
    case workSessionLock = "work_session_lock"
    /// A token revocation made and lifted (audit only; `public.token_revocations` is what
    /// is in force). Its events belong to a tenant, not to a space.
    case tokenRevocation = "token_revocation"
}

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
