/// Whether a pool thread may try to connect, shared by every thread of the pool.
///
/// While the server is down every job would otherwise wait for its own connect
/// timeout. After a failed connect the gate stays shut for `retryInterval`: jobs fail
/// at once with that failure, then one attempt goes through. A success opens it.
///
/// Pure: the pool passes the time in and logs the transitions the methods report.
struct ReconnectGate<Instant: InstantProtocol> where Instant.Duration == Duration {
    let retryInterval: Duration
    private(set) var lastFailure: (at: Instant, error: any Error)?

    init(retryInterval: Duration) {
        self.retryInterval = retryInterval
    }

    /// The error to answer with instead of connecting at `now`, or nil to try.
    func failFast(now: Instant) -> (any Error)? {
        guard let lastFailure, lastFailure.at.duration(to: now) < retryInterval else { return nil }
        return lastFailure.error
    }

    /// A connect succeeded; true when that ends an outage.
    mutating func connected() -> Bool {
        defer { lastFailure = nil }
        return lastFailure != nil
    }

    /// A connect failed at `now`; true when that starts an outage.
    mutating func failed(_ error: any Error, now: Instant) -> Bool {
        defer { lastFailure = (now, error) }
        return lastFailure == nil
    }
}

/// What a pool thread does with its connection before the next job.
enum ConnectionCheck: Equatable {
    case use
    /// Idle long enough that the server may have gone away (and come back) meanwhile,
    /// which only a round trip reveals.
    case ping
    case replace

    static func before<Instant: InstantProtocol>(
        broken: Bool, lastUsed: Instant, now: Instant, idleCheckInterval: Duration
    ) -> ConnectionCheck where Instant.Duration == Duration {
        if broken { return .replace }
        return lastUsed.duration(to: now) > idleCheckInterval ? .ping : .use
    }
}
