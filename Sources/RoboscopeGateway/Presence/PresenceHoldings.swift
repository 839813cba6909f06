/// The users this gateway keeps present through `presence` ops, and what each needs
/// next: a heartbeat a third of the window after the last one, or a leave once the
/// grace period after its last connection has passed.
///
/// A pure state machine: the presence thread tells it what happened, passing the time
/// in, and carries out the actions it returns against Redis. Tests drive it with any
/// instants they like.
struct PresenceHoldings<Instant: InstantProtocol> where Instant.Duration == Duration {
    enum Action: Hashable {
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
        /// Counts the changes to when this holding next needs something: an entry of
        /// `schedule` made before the latest change is stale and skipped.
        var generation = 0
    }

    let beatInterval: Duration
    let grace: Duration
    /// How soon an action `due` returned comes back if its outcome never arrives
    /// (Redis failed): a success reschedules it, and this entry is then stale.
    let retryAfter: Duration
    private(set) var holdings: [PresenceKey: Holding] = [:]
    /// Held and not yet heartbeaten, nor waiting to leave: due at once.
    private var unbeaten: Set<PresenceKey> = []
    /// Every beaten or leaving holding's next time, with its generation then. Holdings
    /// are many (one per user held on the gateway) and `due` runs on every turn of the
    /// presence loop: it reads only what is due.
    private var schedule = DueTimes<Instant, (key: PresenceKey, generation: Int)>()

    init(window: Duration, grace: Duration, retryAfter: Duration = .seconds(1)) {
        beatInterval = window / 3
        self.grace = grace
        self.retryAfter = retryAfter
    }

    /// A connection asked for `key`. The answer is a heartbeat due now; should Redis be
    /// unreachable the holding still counts, and `due` beats it when Redis returns.
    mutating func held(_ key: PresenceKey) -> Action {
        var holding = holdings[key] ?? Holding()
        holding.connections += 1
        if holding.leaveAfter != nil {
            holding.leaveAfter = nil
            holding.generation += 1
            if let lastBeatAt = holding.lastBeatAt {
                schedule.schedule((key, holding.generation), at: lastBeatAt.advanced(by: beatInterval))
            }
        }
        if holding.lastBeatAt == nil { unbeaten.insert(key) }
        holdings[key] = holding
        return .heartbeat(key)
    }

    /// A connection holding `key` closed; the last one starts the grace period.
    mutating func released(_ key: PresenceKey, now: Instant) {
        guard var holding = holdings[key] else { return }
        holding.connections = max(0, holding.connections - 1)
        if holding.connections == 0, holding.leaveAfter == nil {
            let leaveAfter = now.advanced(by: grace)
            holding.leaveAfter = leaveAfter
            holding.generation += 1
            unbeaten.remove(key)
            schedule.schedule((key, holding.generation), at: leaveAfter)
        }
        holdings[key] = holding
    }

    /// Redis accepted a heartbeat for `key` at `redisTime`.
    mutating func beaten(_ key: PresenceKey, redisTime: Int64, now: Instant) {
        guard var holding = holdings[key] else { return }
        holding.lastBeat = redisTime
        holding.lastBeatAt = now
        unbeaten.remove(key)
        if holding.leaveAfter == nil {
            holding.generation += 1
            schedule.schedule((key, holding.generation), at: now.advanced(by: beatInterval))
        }
        holdings[key] = holding
    }

    /// Redis refused `key`'s heartbeat (the session is full): no connection holds it any
    /// more, and, never present, it needs no leave.
    mutating func refused(_ key: PresenceKey) {
        holdings[key] = nil
        unbeaten.remove(key)
    }

    /// Redis carried out the leave of `key`: forget it, unless it was held again since.
    mutating func left(_ key: PresenceKey) {
        if holdings[key]?.connections == 0 {
            holdings[key] = nil
            unbeaten.remove(key)
        }
    }

    /// Heartbeats and leaves due at `now`. Each comes back after `retryAfter` unless its
    /// outcome (`beaten`, `left`) arrives first.
    mutating func due(now: Instant) -> [Action] {
        var actions = unbeaten.map { Action.heartbeat($0) }
        while let (key, generation) = schedule.popDue(now: now) {
            guard let holding = holdings[key], holding.generation == generation else { continue }
            if let leaveAfter = holding.leaveAfter {
                guard now >= leaveAfter else { continue }
                actions.append(.leave(key, ifLastSeenAtOrBefore: holding.lastBeat))
            } else {
                actions.append(.heartbeat(key))
            }
            schedule.schedule((key, generation), at: now.advanced(by: retryAfter))
        }
        return actions
    }

    /// On shutdown everyone held here leaves at once: their connections close with
    /// 1001, and clients that reconnect elsewhere heartbeat again.
    func leavingAll() -> [Action] {
        holdings.map { .leave($0.key, ifLastSeenAtOrBefore: $0.value.lastBeat) }
    }
}
