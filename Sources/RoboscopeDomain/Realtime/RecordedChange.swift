/// One event of the log as a live client sees it: what changed, who changed it, and
/// the data as stored (rendered to the REST shape by `ServerMessage.change`).
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

    public init(
        position: Int64, streamType: String, streamID: EntityID, version: Int64, type: String,
        data: [UInt8], actor: String, recordedAt: Timestamp, details: [UInt8]?
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
    }
}
