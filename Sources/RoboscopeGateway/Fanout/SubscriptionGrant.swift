import RoboscopeDomain
import RoboscopePostgres

/// How the tailer answers one subscription, from what the log says, step by step.
///
/// The topic's head is read up to the live cursor, so the catch-up ends exactly where
/// the next live read starts. With `since`, the catch-up is the topic's events after it
/// up to that head: the grant only counts them (from the topic's sequence numbers, an
/// index probe) and hands the range to the catch-up reader, which pages it as the
/// client's socket drains; the live stream brings the rest (skipping what the client
/// has, should it come from a gateway further ahead).
///
/// Pure: the tailer runs each query a step asks for and reports what it found.
struct SubscriptionGrant {
    enum Step {
        /// Is `since` beyond even the newest event? Answer with `newest(_:)`.
        case askNewest
        /// Without `since` a topic must exist. Answer with `exists(_:)`.
        case askExists
        /// The topic's sequence number at or before this position (nil: no event of the
        /// topic there yet). Answer with `sequence(atSince:)`.
        case askSequence(atOrBefore: Int64)
        case refuse(DomainError)
        /// Announce `position` (and `topicSeq` when it is the topic's own head); live
        /// events up to `covered` are already the client's; `catchUp`, when any, the
        /// events the client gets before the live ones.
        case grant(position: Int64, topicSeq: Int64?, covered: Int64?, catchUp: CatchUpRange?)
    }

    let topic: Topic
    let since: Int64?
    let head: TopicHead
    let maxCatchUpEvents: Int

    init(topic: Topic, since: Int64?, head: TopicHead, maxCatchUpEvents: Int) {
        self.topic = topic
        self.since = since
        self.head = head
        self.maxCatchUpEvents = maxCatchUpEvents
    }

    func start() -> Step {
        guard let since else { return .askExists }
        if since > head.position { return .askNewest }
        return since < head.position ? .askSequence(atOrBefore: since) : granted(catchUp: nil)
    }

    func newest(_ newest: Int64) -> Step {
        guard let since else { return granted(catchUp: nil) }
        if since > newest {
            return .refuse(DomainError.invalid("since", "position \(since) is ahead of the log"))
        }
        // Ahead of this topic's head but not of the log: nothing here to catch up on.
        return granted(catchUp: nil)
    }

    func exists(_ exists: Bool) -> Step {
        exists ? granted(catchUp: nil) : .refuse(Self.unknown(topic))
    }

    /// The topic's sequence number at `since` (its events are numbered 1, 2, 3... with no
    /// gap): the catch-up holds the head's number minus it.
    func sequence(atSince sequence: Int64?) -> Step {
        guard let since else { return granted(catchUp: nil) }
        let events = Int(head.topicSeq - (sequence ?? 0))
        if events > maxCatchUpEvents {
            return .refuse(
                DomainError(
                    .tooFarBehind,
                    "more than \(maxCatchUpEvents) events since \(since): catch up with "
                        + """
                        GET /api/v1/changes?topic=\(topic)&since=\(since), then subscribe with since=<its \
                        next_since>
                        """,
                    field: "since"))
        }
        guard events > 0 else { return granted(catchUp: nil) }
        return granted(catchUp: CatchUpRange(after: since, through: head.position, events: events))
    }

    private func granted(catchUp: CatchUpRange?) -> Step {
        let reached = max(since ?? 0, head.position)
        return .grant(
            position: reached, topicSeq: reached == head.position ? head.topicSeq : nil, covered: since,
            catchUp: catchUp)
    }

    /// The refusal of a topic that does not exist, or that the principal may not see.
    static func unknown(_ topic: Topic) -> DomainError {
        DomainError(.notFound, "\(topic) not found", field: "topic")
    }
}

/// A catch-up to send: the topic's events after `after` through `through` (its head at the
/// live cursor of the grant), `events` of them.
struct CatchUpRange: Equatable, Sendable {
    var after: Int64
    var through: Int64
    var events: Int
}
