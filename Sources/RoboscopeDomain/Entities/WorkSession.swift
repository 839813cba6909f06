/// An inspection or a repair carried out in a space.
public struct WorkSession: Hashable, Sendable {
    public enum SessionType: String, CaseIterable, Codable, Sendable {
        case inspection, repair, other
    }

    public enum Status: String, CaseIterable, Codable, Sendable {
        case draft, active, done, archived
    }

    public var id: EntityID
    public var spaceID: EntityID
    public var sessionType: SessionType
    public var status: Status
    public var startedAt: Timestamp
    public var completedAt: Timestamp?
    public var version: Int64
    public var meta: JSONObject
    public var createdAt: Timestamp
    public var updatedAt: Timestamp

    public init(
        id: EntityID, spaceID: EntityID, sessionType: SessionType, status: Status,
        startedAt: Timestamp, completedAt: Timestamp?, version: Int64, meta: JSONObject,
        createdAt: Timestamp, updatedAt: Timestamp
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
}

extension WorkSession: Codable {
    enum CodingKeys: String, CodingKey {
        case id, status, version, meta
        case spaceID = "space_id"
        case sessionType = "session_type"
        case startedAt = "started_at"
        case completedAt = "completed_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(spaceID, forKey: .spaceID)
        try container.encode(sessionType, forKey: .sessionType)
        try container.encode(status, forKey: .status)
        try container.encode(startedAt, forKey: .startedAt)
        try container.encode(completedAt, forKey: .completedAt)
        try container.encode(version, forKey: .version)
        try container.encode(meta, forKey: .meta)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}
