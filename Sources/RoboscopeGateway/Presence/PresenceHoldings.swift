/// The users this gateway keeps present through `presence` ops, and what each needs
/// next: a heartbeat a third of the window after the last one, or a leave once the
/// grace period after its last connection has passed.
///
/// A pure state machine: the presence thread tells it what happened, passing the time
/// in, and carries out the actions it returns against Redis. Tests drive it with any
/// instants they like.
struct PresenceHoldings<Instant: InstantProtocol> where Instant.Duration == Duration {
    enum Action: Equatable {
        case heartbeat(PresenceKey)
        /// Leave, unless someone heartbeated after our last beat (Redis time).
        case leave(PresenceKey, ifLastSeenAtOrBefore: Int64)
    }

    struct Holding: Equatable {
        var connections = 0
        /// Redis time of our last heartbeat, and when (by our clock) it happened.
        var lastBeat: Int64 = 0
        var lastBeatAt: Instant?
        /// Set when the last connection closed: leave after this, unless held again.
        var leaveAfter: Instant?
    }

    let beatInterval: Duration
    let grace: Duration
    private(set) var holdings: [PresenceKey: Holding] = [:]

    init(window: Duration, grace: Duration) {
        beatInterval = window / 3
        self.grace = grace
    }

    /// A connection asked for `key`. The answer is a heartbeat due now; should Redis be
    /// unreachable the holding still counts, and `due` beats it when Redis returns.
    mutating func held(_ key: PresenceKey) -> Action {
        var holding = holdings[key] ?? Holding()
        holding.connections += 1
        holding.leaveAfter = nil
        holdings[key] = holding
        return .heartbeat(key)
    }

    /// A connection holding `key` closed; the last one starts the grace period.
    mutating func released(_ key: PresenceKey, now: Instant) {
        guard var holding = holdings[key] else { return }
        holding.connections = max(0, holding.connections - 1)
        if holding.connections == 0, holding.leaveAfter == nil {
            holding.leaveAfter = now.advanced(by: grace)
        }
        holdings[key] = holding
    }

    /// Redis accepted a heartbeat for `key` at `redisTime`.
    mutating func beaten(_ key: PresenceKey, redisTime: Int64, now: Instant) {
        guard var holding = holdings[key] else { return }
        holding.lastBeat = redisTime
        holding.lastBeatAt = now
        holdings[key] = holding
    }

    /// Redis carried out the leave of `key`: forget it, unless it was held again since.
    mutating func left(_ key: PresenceKey) {
        if holdings[key]?.connections == 0 { holdings[key] = nil }
    }

    /// Heartbeats and leaves due at `now`.
    func due(now: Instant) -> [Action] {
        var actions: [Action] = []
        for (key, holding) in holdings {
            if let leaveAfter = holding.leaveAfter {
                if now >= leaveAfter { actions.append(.leave(key, ifLastSeenAtOrBefore: holding.lastBeat)) }
            } else if holding.lastBeatAt.map({ $0.duration(to: now) >= beatInterval }) ?? true {
                actions.append(.heartbeat(key))
            }
        }
        return actions
    }

    /// On shutdown everyone held here leaves at once: their connections close with
    /// 1001, and clients that reconnect elsewhere heartbeat again.
    func leavingAll() -> [Action] {
        holdings.map { .leave($0.key, ifLastSeenAtOrBefore: $0.value.lastBeat) }
    }
}
