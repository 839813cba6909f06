import RoboscopeDomain

/// The JSON argument of `eventlog.append(batch jsonb)`; see schema/0004_append_function.sql.
struct BatchDocument: Encodable {
    let batch: AppendBatch

    struct Lock: Encodable {
        let stream: String
        let exclusive: Bool
    }

    struct Requirement: Encodable {
        let stream_type: String
        let stream_id: EntityID
    }

    struct Event: Encodable {
        let event: PendingEvent

        enum CodingKeys: String, CodingKey {
            case event_id, stream_type, stream_id, expected_version, type, data, metadata
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(event.eventID, forKey: .event_id)
            try container.encode(event.stream.type.rawValue, forKey: .stream_type)
            try container.encode(event.stream.id, forKey: .stream_id)
            switch event.expectedVersion {
            case .any: try container.encodeNil(forKey: .expected_version)
            case .noStream: try container.encode(0, forKey: .expected_version)
            case .exactly(let version): try container.encode(version, forKey: .expected_version)
            }
            try container.encode(event.type.rawValue, forKey: .type)
            try container.encode(event.payload, forKey: .data)
            try container.encode(event.metadata, forKey: .metadata)
        }
    }

    struct Children: Encodable {
        let kind: String
        let parent_id: EntityID
        let ids: [EntityID]
    }

    enum CodingKeys: String, CodingKey { case locks, require, expect_children, events }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(batch.locks.map { Lock(stream: $0.name, exclusive: $0.exclusive) }, forKey: .locks)
        try container.encode(
            batch.requiredStreams.map { Requirement(stream_type: $0.type.rawValue, stream_id: $0.id) },
            forKey: .require
        )
        try container.encode(
            batch.expectedChildren.map { Children(kind: $0.kind.rawValue, parent_id: $0.parentID, ids: $0.childIDs) },
            forKey: .expect_children
        )
        try container.encode(batch.events.map(Event.init), forKey: .events)
    }
}
