import Foundation

/// When to send a failed request again: on 503 (and 409 "still in progress"), 429,
/// timeouts and lost connections, never on another 4xx. Delays grow exponentially from
/// `base` up to `cap`, each drawn uniformly from zero to that bound ("full jitter"), and
/// never shorter than the server's `Retry-After`.
public struct RetryPolicy: Sendable, Hashable {
    public var base: Duration
    public var cap: Duration
    /// Sends in all, the first included (1: never retry).
    public var attempts: Int

    /// Delays start below `base`, double with every retry up to `cap`; `attempts` sends in all.
    public init(base: Duration = .milliseconds(200), cap: Duration = .seconds(10), attempts: Int = 6) {
        precondition(attempts >= 1, "at least one attempt")
        self.base = base
        self.cap = cap
        self.attempts = attempts
    }

    public static let never = RetryPolicy(attempts: 1)

    /// The bound of the delay before retry number `retry` (1 for the first retry).
    public func ceiling(forRetry retry: Int) -> Duration {
        let factor = Double(1 << min(max(retry - 1, 0), 30))
        return min(cap, base * factor)
    }

    /// The delay before retry number `retry`: uniform in [0, ceiling], at least `retryAfter`.
    public func delay<R: RandomNumberGenerator>(
        forRetry retry: Int, retryAfter: Double? = nil, using random: inout R
    ) -> Duration {
        let bound = ceiling(forRetry: retry).seconds
        let jittered = Duration.seconds(Double.random(in: 0...bound, using: &random))
        guard let retryAfter else { return jittered }
        return max(jittered, .seconds(retryAfter))
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
