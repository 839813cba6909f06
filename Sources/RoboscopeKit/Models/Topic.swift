import Foundation

/// What a client follows: a work session (its markers, their details, its lock and
/// presence) or a space (the space and its work sessions).
public enum Topic: Hashable, Sendable, CustomStringConvertible {
    case workSession(UUID)
    case space(UUID)

    /// `work_session:<uuid>` or `space:<uuid>`, as the protocol writes it.
    public var description: String {
        switch self {
        case .workSession(let id): return "work_session:\(id.uuidString.lowercased())"
        case .space(let id): return "space:\(id.uuidString.lowercased())"
        }
    }

    /// Parses `work_session:<uuid>` or `space:<uuid>`.
    public init?(_ text: String) {
        guard let colon = text.firstIndex(of: ":"), let id = UUID(uuidString: String(text[text.index(after: colon)...]))
        else {
            return nil
        }
        switch text[..<colon] {
        case "work_session": self = .workSession(id)
        case "space": self = .space(id)
        default: return nil
        }
    }
}

/// One event of a topic, as the WebSocket gateway sends it and the changes feed lists it.
public struct TopicEvent: Sendable, Hashable, Decodable {
    /// `event`, or `lock` for the lock stream's events.
    public var op: String
    public var topic: String
    /// Its place in the whole log: strictly increasing on a topic.
    public var position: Int64
    /// 1 for the topic's first event, one more for each next: a jump means a gap.
    public var topicSeq: Int64
    /// `marker.created`, `work_session.lock_acquired`, …
    public var type: String
    public var streamType: String?
    public var streamID: UUID?
    public var version: Int64
    public var recordedAt: Date
    public var actor: String
    /// The `Idempotency-Key` of the request that caused it.
    public var clientMutationID: String?
    /// The entity as REST returns it (markers with details), `{"id"}` for a deletion;
    /// absent on lock messages (their fields are in `lock`).
    public var data: JSONValue?
    /// The message exactly as received (what `roboscope-client watch` prints).
    public var raw: String = ""

    enum CodingKeys: String, CodingKey, CaseIterable {
        case op, topic, position, type, version, actor, data
        case topicSeq = "topic_seq"
        case streamType = "stream_type"
        case streamID = "stream_id"
        case recordedAt = "recorded_at"
        case clientMutationID = "client_mutation_id"
    }

    /// The data decoded as `type` (a `Marker`, a `WorkSession`, …).
    public func decodeData<T: Decodable>(_ type: T.Type) throws -> T {
        let bytes = try WireCoding.encoder().encode(data ?? .null)
        return try WireCoding.decoder().decode(T.self, from: bytes)
    }

    public var isDeletion: Bool { type.hasSuffix(".deleted") }
}
