import RoboscopeDomain

/// An event as the gateways deliver it: where it stands in the log, the change, and
/// the topics it belongs to.
public struct Delivery: Sendable {
    public var cursor: LogCursor
    public var change: RecordedChange
    /// The work session it concerns (its markers, details and lock too), if any.
    public var workSessionID: EntityID?
    /// The space it concerns (the space and its work sessions), if any.
    public var spaceID: EntityID?

    /// The topics whose subscribers receive it.
    public var topics: [Topic] {
        var topics: [Topic] = []
        if let workSessionID { topics.append(Topic(.workSession, workSessionID)) }
        if let spaceID { topics.append(Topic(.space, spaceID)) }
        return topics
    }
}
