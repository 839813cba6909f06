/// One event of the log as a live client sees it: what changed, who changed it, the
/// data as stored (rendered to the REST shape by `ServerMessage.change`), and where it
/// stands on its topics.
public struct RecordedChange: Sendable {
    public var position: Int64
    public var streamType: String
    public var streamID: EntityID
    public var version: Int64
    public var type: String
    /// The event's data as stored (JSON, timestamps with microseconds).
    public var data: [UInt8]
    public var actor: String
    public var recordedAt: Timestamp
    /// For a marker: its details as of the same transaction (stored JSON), if any.
    public var details: [UInt8]?
    /// The `Idempotency-Key` of the request that caused it, if it had one.
    public var clientMutationID: String?
    /// The trace context of the request that wrote it, if it sent one.
    public var traceParent: TraceParent?
    /// Its topics with its number on each (`topic_seq`), as the append assigned them:
    /// its work session's topic, its space's topic, or both.
    public var topics: [TopicPlace]

    public init(
        position: Int64, streamType: String, streamID: EntityID, version: Int64, type: String,
        data: [UInt8], actor: String, recordedAt: Timestamp, details: [UInt8]?,
        clientMutationID: String? = nil, traceParent: TraceParent? = nil, topics: [TopicPlace] = []
    ) {
        self.position = position
        self.streamType = streamType
        self.streamID = streamID
        self.version = version
        self.type = type
        self.data = data
        self.actor = actor
        self.recordedAt = recordedAt
        self.details = details
        self.clientMutationID = clientMutationID
        self.traceParent = traceParent
        self.topics = topics
    }

    /// The event's number on `topic`, nil when it is not on that topic.
    public func sequence(on topic: Topic) -> Int64? {
        topics.first { $0.topic == topic }?.sequence
    }
}

/// An event's place on one topic: the topic and its `topic_seq` there.
public struct TopicPlace: Hashable, Sendable {
    public var topic: Topic
    public var sequence: Int64

    public init(_ topic: Topic, _ sequence: Int64) {
        self.topic = topic
        self.sequence = sequence
    }
}
