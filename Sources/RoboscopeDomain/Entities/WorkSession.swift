/// An inspection or a repair carried out in a space.
public struct WorkSession: Hashable, Sendable {
    public typealias SessionType = WorkSessionType
    public typealias Status = WorkSessionStatus

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
}

extension WorkSession: Decodable {
    enum CodingKeys: String, CodingKey {
        case id, status, version, meta
        case spaceID = "space_id"
        case sessionType = "session_type"
        case startedAt = "started_at"
        case completedAt = "completed_at"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

extension WorkSession: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("id"); writer.value(id)
            writer.key("space_id"); writer.value(spaceID)
            writer.key("session_type"); writer.value(sessionType.rawValue)
            writer.key("status"); writer.value(status.rawValue)
            writer.key("started_at"); writer.value(startedAt)
            writer.key("completed_at"); writer.value(completedAt)
            writer.key("version"); writer.value(version)
            writer.key("meta"); writer.value(JSONValue.object(meta))
            writer.key("created_at"); writer.value(createdAt)
            writer.key("updated_at"); writer.value(updatedAt)
        }
    }
}

/// Where a work session is: its id and its space. A work session never moves to another
/// space and an id is never reused, so this never changes once the session exists; a
/// write to one of its markers needs nothing else of it.
public struct WorkSessionPlace: Hashable, Sendable {
    public let id: EntityID
    public let spaceID: EntityID

    public init(id: EntityID, spaceID: EntityID) {
        self.id = id
        self.spaceID = spaceID
    }
}

extension WorkSession {
    public var place: WorkSessionPlace { WorkSessionPlace(id: id, spaceID: spaceID) }
}
