/// The data of an event: the entity's whole state after the change, or the id of a
/// deleted entity. Full-state events keep projections and rebuilds a plain upsert.
public enum EventPayload: Hashable, Sendable {
    case space(Space)
    case workSession(WorkSession)
    case marker(Marker)
    case markerDetails(MarkerDetails)
    case deleted(Deletion)
}

/// The data of a `*.deleted` event.
public struct Deletion: Hashable, Sendable, Codable {
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

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(cascadedFrom, forKey: .cascadedFrom)
    }
}

extension EventPayload: Encodable {
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .space(let value): try value.encode(to: encoder)
        case .workSession(let value): try value.encode(to: encoder)
        case .marker(let value): try value.encode(to: encoder)
        case .markerDetails(let value): try value.encode(to: encoder)
        case .deleted(let value): try value.encode(to: encoder)
        }
    }
}
