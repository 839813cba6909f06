import Foundation
import HTTPTypes
import Hummingbird
import RoboscopeDomain

/// A token bucket per client address on `/api/v1`: `rate` requests per second with
/// bursts up to `burst`; past it, 429 with `Retry-After` (whole seconds until a token).
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = RoboscopeRequestContext
    let buckets: TokenBuckets

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let client = context.remoteAddress?.ipAddress ?? "unknown"
        if let wait = buckets.take(for: client) {
            throw DomainError(.rateLimited, "more than \(buckets.rate) requests per second from \(client); retry in \(wait) s",
                              details: ["retry_after": .integer(Int64(wait))])
        }
        return try await next(request, context)
    }
}

/// The buckets, shared by every request; idle clients are forgotten.
final class TokenBuckets: @unchecked Sendable {
    let rate: Double
    let burst: Double
    private let lock = NSLock()
    private var buckets: [String: (tokens: Double, at: TimeInterval)] = [:]

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
    }

    /// Takes a token; nil if there was one, else the seconds until there is.
    func take(for client: String, now: TimeInterval = ProcessInfo.processInfo.systemUptime) -> Int? {
        lock.lock(); defer { lock.unlock() }
        if buckets.count > 50_000 { buckets = buckets.filter { now - $0.value.at < 60 } }
        var bucket = buckets[client] ?? (burst, now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.at) * rate)
        bucket.at = now
        defer { buckets[client] = bucket }
        guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
        bucket.tokens -= 1
        return nil
    }
}

extension DomainError.Code {
    /// Too many requests from one client: 429 with Retry-After.
    public static let rateLimited = DomainError.Code("rate_limited")
}
