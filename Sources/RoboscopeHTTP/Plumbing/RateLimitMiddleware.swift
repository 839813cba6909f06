import Foundation
import HTTPTypes
import Hummingbird
import RoboscopeDomain
import Synchronization

/// A token bucket per client address on `/api/v1`: `rate` requests per second with
/// bursts up to `burst`; past it, 429 with `Retry-After` (whole seconds until a token).
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = RoboscopeRequestContext
    let buckets: TokenBuckets

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let client = context.clientAddress ?? "unknown"
        if let wait = buckets.take(for: client) {
            throw DomainError(.rateLimited, "more than \(buckets.rate) requests per second from \(client); retry in \(wait) s",
                              details: ["retry_after": .integer(Int64(wait))])
        }
        return try await next(request, context)
    }
}

/// The buckets, shared by every request.
final class TokenBuckets: Sendable {
    private let limiter: Mutex<RateLimiter>
    let rate: Double

    init(rate: Double, burst: Double) {
        self.rate = rate
        limiter = Mutex(RateLimiter(rate: rate, burst: burst))
    }

    /// Takes a token; nil if there was one, else the seconds until there is.
    func take(for client: String, now: TimeInterval = ProcessInfo.processInfo.systemUptime) -> Int? {
        limiter.withLock { $0.take(for: client, now: now) }
    }

    /// Charges what a request cost beyond its token: a long poll, a token per second it
    /// held a connection. The bucket may go into debt (down to minus the burst): the
    /// client's next requests wait it out.
    func charge(for client: String, seconds: Duration, now: TimeInterval = ProcessInfo.processInfo.systemUptime) {
        let cost = Double(seconds.components.seconds) + Double(seconds.components.attoseconds) / 1e18
        limiter.withLock { $0.charge(for: client, cost: cost, now: now) }
    }
}

/// A token bucket per client, refilled at `rate` tokens a second up to `burst`. Pure:
/// the time comes in as seconds on any monotonic clock.
struct RateLimiter {
    let rate: Double
    let burst: Double
    private var buckets: [String: (tokens: Double, at: TimeInterval)] = [:]
    /// Past this many clients, those idle for a minute (full again) are forgotten.
    static var forgetAbove: Int { 50_000 }

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
    }

    var clientCount: Int { buckets.count }

    /// Takes `cost` more tokens after the fact, down to minus the burst at most.
    mutating func charge(for client: String, cost: Double, now: TimeInterval) {
        var bucket = buckets[client] ?? (burst, now)
        bucket.tokens = max(-burst, min(burst, bucket.tokens + (now - bucket.at) * rate) - cost)
        bucket.at = now
        buckets[client] = bucket
    }

    /// Takes a token; nil if there was one, else the whole seconds until there is.
    mutating func take(for client: String, now: TimeInterval) -> Int? {
        if buckets.count > Self.forgetAbove { buckets = buckets.filter { now - $0.value.at < 60 } }
        var bucket = buckets[client] ?? (burst, now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.at) * rate)
        bucket.at = now
        defer { buckets[client] = bucket }
        guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
        bucket.tokens -= 1
        return nil
    }
}
