import RoboscopeDomain
import Synchronization

/// A subscription asked of the tailer and not answered yet. The connection withdraws it
/// (`unsubscribe`, close); the tailer, on its own thread, then skips it or stops reading
/// its catch-up, instead of reading and rendering thousands of events nobody waits for.
final class PendingGrant: Sendable {
    let topic: Topic
    /// `"presence": "changes"`: joins and leaves after one full list.
    let presenceChanges: Bool
    private let withdrawnFlag = Atomic<Bool>(false)

    init(topic: Topic, presenceChanges: Bool = false) {
        self.topic = topic
        self.presenceChanges = presenceChanges
    }

    var isWithdrawn: Bool { withdrawnFlag.load(ordering: .acquiring) }

    func withdraw() {
        withdrawnFlag.store(true, ordering: .releasing)
    }
}

/// One connection's subscriptions: those granted, those asked of the tailer and not
/// answered yet, and those withdrawn before their answer came. Decides what a
/// `subscribe`, an answer from the tailer and an `unsubscribe` mean; the shard carries
/// it out.
struct ConnectionSubscriptions {
    let limit: Int
    /// Subscriptions in the tailer's queue at once, withdrawn ones included until the
    /// tailer answers them: a client cannot keep the tailer busy by subscribing and
    /// unsubscribing faster than it serves (docs/websocket.md "Limits").
    let inFlightLimit: Int
    private(set) var active: Set<Topic> = []
    private(set) var pending: [Topic: PendingGrant] = [:]
    private var withdrawn: [ObjectIdentifier: PendingGrant] = [:]

    init(limit: Int, inFlightLimit: Int = 4) {
        self.limit = limit
        self.inFlightLimit = inFlightLimit
    }

    /// Asked of the tailer and not answered yet, withdrawn or not.
    var inFlight: Int { pending.count + withdrawn.count }

    /// `subscribe`: the grant to ask the tailer for (the topic is now pending), else the refusal.
    mutating func requested(_ topic: Topic, presenceChanges: Bool = false) -> Result<PendingGrant, DomainError> {
        if active.contains(topic) || pending[topic] != nil {
            return .failure(DomainError(.alreadySubscribed, "already subscribed to \(topic)", field: "topic"))
        }
        if active.count + pending.count >= limit {
            return .failure(
                DomainError(.tooManySubscriptions, "at most \(limit) subscriptions per connection", field: "topic"))
        }
        if inFlight >= inFlightLimit {
            return .failure(
                DomainError(
                    .rateLimited,
                    """
                    at most \(inFlightLimit) subscriptions waiting for their answer at once; retry once one is \
                    answered
                    """,
                    field: "topic", details: ["retry_after": .integer(1)]))
        }
        let grant = PendingGrant(topic: topic, presenceChanges: presenceChanges)
        pending[topic] = grant
        return .success(grant)
    }

    enum Settlement: Equatable {
        /// Send the answer; a grant makes the topic active.
        case answer
        /// Nobody waits for this answer any more (unsubscribed meanwhile, or closed); a
        /// grant's count in the registry must be given back.
        case discard
    }

    /// The tailer answered `grant`.
    mutating func settled(_ grant: PendingGrant, granted: Bool, connectionOpen: Bool) -> Settlement {
        if withdrawn.removeValue(forKey: ObjectIdentifier(grant)) != nil { return .discard }
        guard connectionOpen, pending[grant.topic] === grant else { return .discard }
        pending[grant.topic] = nil
        if granted { active.insert(grant.topic) }
        return .answer
    }

    enum Unsubscription: Equatable {
        /// It was active: unlink it from the fan-out.
        case unlink
        /// It was still pending: withdrawn, and the tailer's answer will be discarded.
        case cancelled
        case notSubscribed
    }

    mutating func unsubscribed(_ topic: Topic) -> Unsubscription {
        if active.remove(topic) != nil { return .unlink }
        if let grant = pending.removeValue(forKey: topic) {
            grant.withdraw()
            withdrawn[ObjectIdentifier(grant)] = grant
            return .cancelled
        }
        return .notSubscribed
    }

    /// The connection closed: the active topics to unlink. Pending grants are withdrawn
    /// (the tailer skips them) and their answers discarded when they come.
    mutating func closed() -> Set<Topic> {
        for grant in pending.values { grant.withdraw() }
        defer { active = []; pending = [:]; withdrawn = [:] }
        return active
    }
}
