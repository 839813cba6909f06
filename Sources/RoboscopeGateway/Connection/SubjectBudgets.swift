import RoboscopeDomain
import Synchronization

/// WebSocket ops per key (a subject, or a tenant) across every connection and loop of
/// the gateway: a client opening many sockets gets no more than one that opens one. Buckets of subjects that
/// are full again are forgotten once there are more than `forgetAbove` (so the map's
/// size is bounded by the subjects active within a refill period).
final class SubjectBudgets: Sendable {
    private let buckets = Mutex<[String: TokenBucket]>([:])
    let rate: Double
    let burst: Double
    let forgetAbove: Int

    init(rate: Double, burst: Double, forgetAbove: Int = 10_000) {
        self.rate = rate
        self.burst = burst
        self.forgetAbove = forgetAbove
    }

    /// Takes one op of `subject` (`tenant/subject`); nil if allowed, else the seconds to wait.
    func take(for subject: String, now: Double) -> Int? {
        buckets.withLock { buckets in
            if buckets.count > forgetAbove {
                buckets = buckets.filter { !$0.value.isFull(at: now) }
            }
            var bucket = buckets[subject] ?? TokenBucket(rate: rate, burst: burst, now: now)
            defer { buckets[subject] = bucket }
            return bucket.take(now: now)
        }
    }

    /// Charges `cost` more to `subject`'s bucket (into debt).
    func charge(_ cost: Double, for subject: String, now: Double) {
        buckets.withLock { buckets in
            var bucket = buckets[subject] ?? TokenBucket(rate: rate, burst: burst, now: now)
            bucket.charge(cost, now: now)
            buckets[subject] = bucket
        }
    }

    var count: Int { buckets.withLock { $0.count } }
}
