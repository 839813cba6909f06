import Foundation

/// An inspection or a repair in a space.
public struct WorkSession: Codable, Sendable, Hashable, Identifiable {
    /// What the session is for.
    public typealias SessionType = WorkSessionType
    /// Where the session stands (`draft` when created).
    public typealias Status = WorkSessionStatus

    public var id: UUID
    public var spaceID: UUID
    public var sessionType: SessionType
    public var status: Status
    public var startedAt: Date
    public var completedAt: Date?
    public var version: Int64
    public var meta: [String: JSONValue]
    public var createdAt: Date
    public var updatedAt: Date

    /// A session as the server answers it (for tests, previews and test doubles).
    public init(
        id: UUID, spaceID: UUID, sessionType: SessionType, status: Status, startedAt: Date, completedAt: Date?,
        version: Int64, meta: [String: JSONValue], createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.spaceID = spaceID
        self.sessionType = sessionType
        self.status = status
        self.startedAt = startedAt
        self.completedAt = completedAt
        self.version = version
        self.meta = meta
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, status, version, meta
        case spaceID = "space_id"
        case sessionType = "session_type"
        case startedAt = "started_at"
        case completedAt = "completed_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

/// What creating a work session sends.
public struct NewWorkSession: Encodable, Sendable, Hashable {
    public var id: UUID?
    public var spaceID: UUID
    public var sessionType: WorkSession.SessionType?
    public var status: WorkSession.Status?
    public var meta: [String: JSONValue]?

    /// A work session to create in `spaceID`.
    public init(
        id: UUID? = nil, spaceID: UUID, sessionType: WorkSession.SessionType? = nil,
        status: WorkSession.Status? = nil, meta: [String: JSONValue]? = nil
    ) {
        self.id = id
        self.spaceID = spaceID
        self.sessionType = sessionType
        self.status = status
        self.meta = meta
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, status, meta
        case spaceID = "space_id"
        case sessionType = "session_type"
    }
}
