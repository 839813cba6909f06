import RoboscopeDomain

/// One connection's subscriptions: those granted, and those asked of the tailer and not
/// answered yet. Decides what a `subscribe`, an answer from the tailer and an
/// `unsubscribe` mean; the shard carries it out.
struct ConnectionSubscriptions {
    let limit: Int
    private(set) var active: Set<Topic> = []
    private(set) var pending: Set<Topic> = []

    init(limit: Int) {
        self.limit = limit
    }

    /// `subscribe`: nil to ask the tailer (the topic is now pending), else the refusal.
    mutating func requested(_ topic: Topic) -> DomainError? {
        if active.contains(topic) || pending.contains(topic) {
            return DomainError(.alreadySubscribed, "already subscribed to \(topic)", field: "topic")
        }
        if active.count + pending.count >= limit {
            return DomainError(.tooManySubscriptions, "at most \(limit) subscriptions per connection", field: "topic")
        }
        pending.insert(topic)
        return nil
    }

    enum Settlement: Equatable {
        /// Send the answer; a grant makes the topic active.
        case answer
        /// Nobody waits for this answer any more (unsubscribed meanwhile, or closed); a
        /// grant's count in the registry must be given back.
        case discard
    }

    /// The tailer answered for `topic`.
    mutating func settled(_ topic: Topic, granted: Bool, connectionOpen: Bool) -> Settlement {
        guard connectionOpen, pending.remove(topic) != nil else { return .discard }
        if granted { active.insert(topic) }
        return .answer
    }

    enum Unsubscription: Equatable {
        /// It was active: unlink it from the fan-out.
        case unlink
        /// It was still pending: the tailer's answer will be discarded.
        case cancelled
        case notSubscribed
    }

    mutating func unsubscribed(_ topic: Topic) -> Unsubscription {
        if active.remove(topic) != nil { return .unlink }
        if pending.remove(topic) != nil { return .cancelled }
        return .notSubscribed
    }

    /// The connection closed: the active topics to unlink. Pending answers are discarded
    /// when they come.
    mutating func closed() -> Set<Topic> {
        defer { active = []; pending = [] }
        return active
    }
}
