import RoboscopePostgres
import RoboscopeDomain

/// One framed message for a topic's subscribers, handed to every shard.
struct LiveItem: @unchecked Sendable {
    var topic: Topic
    /// Where the event stands in the log (nil for presence, which is not logged).
    var cursor: LogCursor?
    var frame: SharedFrame
}

/// What the tailer answers to a subscription.
enum SubscribeOutcome: @unchecked Sendable {
    /// `head`: the position the client is up to date with once `catchUp` is sent;
    /// `skipThrough`: live events up to this cursor are already the client's.
    case granted(head: Int64, catchUp: [SharedFrame], skipThrough: LogCursor?)
    case refused(DomainError)
}
