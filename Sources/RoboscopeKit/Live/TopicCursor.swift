/// Where a client stands on a topic, and what an arriving event means for it: the pure
/// part of following a topic. On a topic positions strictly increase and `topic_seq`
/// counts 1, 2, 3, … (docs/sync.md), so an event is either the next one, one the client
/// has already, or past a gap that the changes feed can fill.
public struct TopicCursor: Hashable, Sendable, Codable {
    /// The last position processed: the `since` to resume from. 0 before any.
    public var position: Int64
    /// The last `topic_seq` processed; nil until known (a subscription without `since`
    /// to a topic the client has never seen).
    public var topicSeq: Int64?

    /// `TopicCursor()` follows from now on; `TopicCursor(position: 0, topicSeq: 0)` from the
    /// topic's beginning; a stored cursor from where it was.
    public init(position: Int64 = 0, topicSeq: Int64? = nil) {
        self.position = position
        self.topicSeq = topicSeq
    }

    /// What an arriving event means for the cursor.
    public enum Verdict: Hashable, Sendable {
        /// The next event: hand it on and `advance`.
        case next
        /// Already processed (a duplicate, or a replay across a reconnect): drop it.
        case seen
        /// Events are missing before this one: fetch the topic after `position` first.
        case gap(missing: Int64)
    }

    /// Whether the event at `position` with `topicSeq` is the next one, one already seen,
    /// or past a gap.
    public func judge(position eventPosition: Int64, topicSeq eventSeq: Int64) -> Verdict {
        if eventPosition <= position { return .seen }
        guard let topicSeq else { return .next }
        if eventSeq <= topicSeq { return .seen }
        if eventSeq == topicSeq + 1 { return .next }
        return .gap(missing: eventSeq - topicSeq - 1)
    }

    public mutating func advance(position eventPosition: Int64, topicSeq eventSeq: Int64) {
        position = eventPosition
        topicSeq = eventSeq
    }

    /// A subscription's answer: where the topic stood when the catch-up was sent. Moves
    /// a cursor that knows nothing yet; never moves one back.
    public mutating func start(position subscribed: Int64, topicSeq subscribedSeq: Int64?) {
        if position == 0 && topicSeq == nil {
            position = subscribed
            topicSeq = subscribedSeq
        } else if topicSeq == nil, subscribed == position {
            topicSeq = subscribedSeq
        }
    }
}
