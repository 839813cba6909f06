/// A token bucket: `rate` tokens a second up to `burst`; an action takes its cost. Pure:
/// the time comes in as seconds on any monotonic clock, so tests drive it.
public struct TokenBucket: Sendable, Equatable {
    public let rate: Double
    public let burst: Double
    private var tokens: Double
    private var at: Double

    /// A full bucket at `now`.
    public init(rate: Double, burst: Double, now: Double) {
        self.rate = rate
        self.burst = burst
        tokens = burst
        at = now
    }

    /// Takes `cost` tokens: nil when there were enough, else the whole seconds (at least
    /// one) until there will be. A cost above the burst is charged as the burst (it would
    /// never fit otherwise), and leaves the bucket empty.
    public mutating func take(_ cost: Double = 1, now: Double) -> Int? {
        refill(now)
        let cost = min(cost, burst)
        guard tokens >= cost else { return max(1, Int(((cost - tokens) / rate).rounded(.up))) }
        tokens -= cost
        return nil
    }

    /// Charges `cost` after the fact (what an op turned out to cost), into debt: the
    /// client's next ops wait it out (a 10,000-event catch-up at 20 ops a second, 5 s).
    public mutating func charge(_ cost: Double, now: Double) {
        refill(now)
        tokens -= cost
    }

    /// Full again at `now`: an idle client's bucket can be forgotten.
    public func isFull(at now: Double) -> Bool {
        tokens + (now - at) * rate >= burst
    }

    private mutating func refill(_ now: Double) {
        tokens = min(burst, tokens + max(0, now - at) * rate)
        at = max(at, now)
    }
}
