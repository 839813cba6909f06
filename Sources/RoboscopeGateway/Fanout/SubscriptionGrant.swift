import RoboscopeDomain
import RoboscopePostgres

/// How the tailer answers one subscription, from what the log says, step by step.
///
/// The topic's head is read up to the live cursor, so the catch-up ends exactly where
/// the next live read starts. With `since`, the catch-up is the topic's events after it
/// that live reads have passed, read in pages; the live stream brings the rest
/// (skipping what the client has, should it come from a gateway further ahead).
///
/// Pure: the tailer runs each query a step asks for and reports what it found.
struct SubscriptionGrant {
    enum Step {
        /// Is `since` beyond even the newest event? Answer with `newest(_:)`.
        case askNewest
        /// Without `since` a topic must exist. Answer with `exists(_:)`.
        case askExists
        /// Read a page of the topic's events after this position. Answer with `read(count:last:)`.
        case read(after: Int64)
        case refuse(DomainError)
        /// Announce `position` (and `topicSeq` when it is the topic's own head); live
        /// events up to `covered` are already the client's.
        case grant(position: Int64, topicSeq: Int64?, covered: Int64?)
    }

    let topic: Topic
    let since: Int64?
    let head: TopicHead
    let maxCatchUpEvents: Int
    /// Events of the catch-up read so far.
    private(set) var caughtUp = 0

    init(topic: Topic, since: Int64?, head: TopicHead, maxCatchUpEvents: Int) {
        self.topic = topic
        self.since = since
        self.head = head
        self.maxCatchUpEvents = maxCatchUpEvents
    }

    func start() -> Step {
        guard let since else { return .askExists }
        if since > head.position { return .askNewest }
        return since < head.position ? .read(after: since) : granted
    }

    func newest(_ newest: Int64) -> Step {
        guard let since else { return granted }
        if since > newest {
            return .refuse(DomainError.invalid("since", "position \(since) is ahead of the log"))
        }
        // Ahead of this topic's head but not of the log: nothing here to catch up on.
        return granted
    }

    func exists(_ exists: Bool) -> Step {
        exists ? granted : .refuse(Self.unknown(topic))
    }

    /// A page of `count` events was read, the last at `last` (nil when empty).
    mutating func read(count: Int, last: Int64?) -> Step {
        caughtUp += count
        if caughtUp > maxCatchUpEvents, let since {
            return .refuse(DomainError(
                .tooFarBehind,
                "more than \(maxCatchUpEvents) events since \(since): catch up with "
                    + "GET /api/v1/changes?topic=\(topic)&since=\(since), then subscribe with since=<its next_since>",
                field: "since"))
        }
        guard let last, last < head.position else { return granted }
        return .read(after: last)
    }

    private var granted: Step {
        let reached = max(since ?? 0, head.position)
        return .grant(position: reached, topicSeq: reached == head.position ? head.topicSeq : nil, covered: since)
    }

    /// The refusal of a topic that does not exist, or that the principal may not see.
    static func unknown(_ topic: Topic) -> DomainError {
        DomainError(.notFound, "\(topic) not found", field: "topic")
    }
}
