/// The data of an event: the entity's whole state after the change, or the id of a
/// deleted entity. Full-state events keep projections and rebuilds a plain upsert.
public enum EventPayload: Hashable, Sendable {
    case space(Space)
    case workSession(WorkSession)
    case marker(Marker)
    case markerDetails(MarkerDetails)
    case deleted(Deletion)
    case lock(LockAudit)
    case revocation(StoredRevocation)
}

/// The data of a `*.deleted` event.
public struct Deletion: Hashable, Sendable, Decodable {
    public var id: EntityID
    /// The entity whose deletion caused this one (`work_session` for its markers), if any.
    public var cascadedFrom: String?

    public init(id: EntityID, cascadedFrom: String? = nil) {
        self.id = id
        self.cascadedFrom = cascadedFrom
    }

    enum CodingKeys: String, CodingKey {
        case id
        case cascadedFrom = "cascaded_from"
    }
}

extension Deletion: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("id"); writer.value(id)
            writer.key("cascaded_from"); writer.value(cascadedFrom)
        }
    }
}

extension EventPayload: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        switch self {
        case .space(let value): writer.value(value)
        case .workSession(let value): writer.value(value)
        case .marker(let value): writer.value(value)
        case .markerDetails(let value): writer.value(value)
        case .deleted(let value): writer.value(value)
        case .lock(let value): writer.value(value)
        case .revocation(let value): writer.value(value)
        }
    }
}
