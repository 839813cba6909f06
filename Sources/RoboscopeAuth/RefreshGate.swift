/// When a JWK Set may be fetched again: on schedule every `interval`, and early (a token
/// named a `kid` the set lacks) at most once per `minimumSpacing`, so that tokens with
/// made-up `kid`s cannot make the service hammer the identity provider. Pure, with the
/// clock injected.
public struct RefreshGate<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration {
    public let interval: Duration
    public let minimumSpacing: Duration
    private var last: Instant?

    public init(interval: Duration, minimumSpacing: Duration = .seconds(30)) {
        self.interval = interval
        self.minimumSpacing = minimumSpacing
    }

    /// Whether a scheduled refresh is due at `now`.
    public func isDue(now: Instant) -> Bool {
        guard let last else { return true }
        return last.advanced(by: interval) <= now
    }

    /// Whether an early refresh may run at `now`.
    public func mayRefreshEarly(now: Instant) -> Bool {
        guard let last else { return true }
        return last.advanced(by: minimumSpacing) <= now
    }

    /// A fetch started at `now` (whatever its outcome: a failing provider is not retried
    /// faster than one that answers).
    public mutating func fetched(now: Instant) {
        last = now
    }
}
