import Logging
import RoboscopePostgres
import RoboscopeDomain

/// One framed message for a topic's subscribers, handed to every shard.
struct LiveItem: Sendable {
    var topic: Topic
    /// The event's position (nil for presence, which is not logged).
    var position: Int64?
    var frame: SharedFrame
    /// Presence only: what `"presence": "changes"` subscribers get instead of `frame`
    /// (nil: nothing, the change cancelled out).
    var presenceDelta: SharedFrame? = nil
    var isPresence = false
    /// The trace the event's write stored (its append's span when the writer traced):
    /// its delivery here is a span of that trace.
    var traceParent: TraceParent? = nil
}

/// What the tailer answers to a subscription.
enum SubscribeOutcome: Sendable {
    /// `position` (and `topicSeq`, when known): the topic's newest event the client has
    /// once its catch-up is sent; `covered`: live events of the topic up to this position
    /// are already the client's (its `since`); `catchUp`: the events to page to it first,
    /// read up to `until` (the live cursor at the grant).
    case granted(
        position: Int64, topicSeq: Int64?, covered: Int64?, catchUp: CatchUpRange?, until: LogCursor, head: TopicHead?)
    case refused(DomainError)
}

extension SharedFrame {
    /// An event as a topic's subscribers get it (`ServerMessage.change`), rendered once
    /// for all of them; nil, logged, for an event that cannot be rendered.
    static func event(_ delivery: Delivery, on topic: Topic, logger: Logger) -> SharedFrame? {
        do {
            return SharedFrame(text: try ServerMessage.change(delivery.change, topic: topic))
        } catch {
            logger.error(
                "cannot render event", metadata: ["position": "\(delivery.cursor.position)", "error": "\(error)"])
            return nil
        }
    }
}
