import RoboscopeDomain

/// An event as the gateways deliver it: where it stands in the log and the change,
/// which knows its topics.
public struct Delivery: Sendable {
    public var cursor: LogCursor
    public var change: RecordedChange

    /// The topics whose subscribers receive it.
    public var topics: [Topic] { change.topics.map(\.topic) }
}
