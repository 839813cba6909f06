import BlockingPool
import Foundation
import HTTPTypes
import Hummingbird
import Metrics
import RoboscopeDomain
import Synchronization

/// The rate limits of `/api/v1` (docs/operations.md#rate-limit): a token bucket per
/// subject (per client address for requests without a token, that is with
/// authentication off), and one per tenant. A request takes a token of each at the door;
/// what it cost beyond that (a bulk's markers, a long poll's seconds, a big page) is
/// charged when known, and may leave the buckets in debt. Past either: 429 with
/// `Retry-After`, the body naming the limit.
struct RateLimitMiddleware: APIMiddleware {
    let budgets: RequestBudgets

    func handle(_ request: Request, context: Context, next: Next) async throws -> Response {
        if let refusal = budgets.take(context) { throw refusal }
        return try await next(request, context)
    }
}

/// How fast requests may come: per subject (or address) and per tenant; nil: no limit.
public struct RateLimits: Sendable {
    public var perClient: (rate: Double, burst: Double)?
    public var perTenant: (rate: Double, burst: Double)?
    /// Refused tokens per client address, with authentication on.
    public var unauthenticated: (rate: Double, burst: Double)?

    public init(
        perClient: (rate: Double, burst: Double)? = nil, perTenant: (rate: Double, burst: Double)? = nil,
        unauthenticated: (rate: Double, burst: Double)? = nil
    ) {
        self.perClient = perClient
        self.perTenant = perTenant
        self.unauthenticated = unauthenticated
    }
}

/// The buckets of every client and tenant, shared by all requests.
final class RequestBudgets: Sendable {
    let clients: TokenBuckets?
    let tenants: TokenBuckets?
    /// Refused tokens per address (nil with authentication off, or the limit off).
    let refusedTokens: TokenBuckets?
    /// With authentication on, clients are subjects; off, addresses.
    let bySubject: Bool
    private let refused: [String: Counter]

    /// `plans`: a tenant whose plan names a `rate_limit` has that rate (bursts of twice
    /// as many) instead of `limits.perTenant`'s; a tenant without one, the flag's (none
    /// when the flag is off).
    init(_ limits: RateLimits, bySubject: Bool, plans: TenantPlans? = nil) {
        clients = limits.perClient.map { TokenBuckets(rate: $0.rate, burst: $0.burst) }
        if bySubject, limits.perTenant != nil || plans != nil {
            let flag = limits.perTenant
            tenants = TokenBuckets(
                rate: flag?.rate ?? TokenBuckets.unlimited, burst: flag?.burst ?? TokenBuckets.unlimited
            ) { tenant in
                plans?.plan(for: tenant).rateLimit.map { (rate: $0, burst: $0 * 2) } ?? flag
            }
        } else {
            tenants = nil
        }
        refusedTokens = bySubject ? limits.unauthenticated.map { TokenBuckets(rate: $0.rate, burst: $0.burst) } : nil
        self.bySubject = bySubject
        var refused: [String: Counter] = [:]
        for limit in ["subject", "address", "tenant"] {
            refused[limit] = Counter(label: "roboscope_rate_limited_total", dimensions: [("limit", limit)])
            refused[limit]!.increment(by: 0)
        }
        self.refused = refused
        for (limit, rate) in [
            ("client", limits.perClient?.rate ?? 0), ("tenant", bySubject ? limits.perTenant?.rate ?? 0 : 0),
        ] {
            Gauge(label: "roboscope_rate_limit_per_second", dimensions: [("limit", limit)]).record(rate)
        }
    }

    var isLimiting: Bool { clients != nil || tenants != nil }

    private func client(_ context: RoboscopeRequestContext) -> (key: String, limit: String) {
        bySubject
            ? ("\(context.principal.tenant)/\(context.principal.subject)", "subject")
            : (context.clientAddress ?? "unknown", "address")
    }

    /// Takes one token of the client's and of its tenant's bucket; the refusal otherwise.
    func take(_ context: RoboscopeRequestContext) -> DomainError? {
        let (key, limit) = client(context)
        if let clients, let wait = clients.take(for: key) {
            refused[limit]?.increment()
            return Self.refusal(limit, rate: clients.rate, wait: wait)
        }
        if let tenants, let wait = tenants.take(for: context.principal.tenant) {
            refused["tenant"]?.increment()
            return Self.refusal("tenant", rate: tenants.rate(of: context.principal.tenant), wait: wait)
        }
        return nil
    }

    /// Charges a list or page of `rows` rows, or a report that read `events` events:
    /// 1 token per 100, of which the door took the first (docs/security.md, "Fair share").
    func charge(_ context: RoboscopeRequestContext, rows: Int) {
        charge(context, cost: RequestCost.beyondTheDoor(Double(rows) / RequestCost.rowsPerToken))
    }

    /// Charges `cost` more tokens (what the request turned out to cost) to both buckets.
    func charge(_ context: RoboscopeRequestContext, cost: Double) {
        guard cost > 0 else { return }
        let (key, _) = client(context)
        clients?.charge(for: key, cost: cost)
        tenants?.charge(for: context.principal.tenant, cost: cost)
    }

    static func refusal(_ limit: String, rate: Double, wait: Int, what: String = "requests") -> DomainError {
        DomainError(
            .rateLimited,
            "more than \(rate.formatted()) \(what) a second for this \(limit); retry in \(wait) s",
            details: ["retry_after": .integer(Int64(wait)), "limit": .string(limit)])
    }
}

/// What requests cost, in tokens of the rate limit: the door takes 1 of every request,
/// and a request that read or wrote more is charged the rest once it knows.
enum RequestCost {
    /// Rows of a list or page, or events a report read, per token.
    static let rowsPerToken = 100.0

    /// The part of a `total` charge the door's token did not pay.
    static func beyondTheDoor(_ total: Double) -> Double { max(0, total - 1) }
}

/// Token buckets by key (a subject, an address, a tenant).
final class TokenBuckets: Sendable {
    private let limiter: Mutex<RateLimiter>
    let rate: Double
    /// A key's own rate and burst (a tenant's plan); nil: `rate` and the burst given.
    private let limitsOf: (@Sendable (String) -> (rate: Double, burst: Double)?)?
    /// The rate of a bucket that never runs dry (a tenant without a plan's rate, the flag off).
    static let unlimited = 1e12

    init(rate: Double, burst: Double, limitsOf: (@Sendable (String) -> (rate: Double, burst: Double)?)? = nil) {
        self.rate = rate
        self.limitsOf = limitsOf
        limiter = Mutex(RateLimiter(rate: rate, burst: burst))
    }

    func rate(of key: String) -> Double { limitsOf?(key)?.rate ?? rate }

    /// Takes a token; nil if there was one, else the seconds until there is.
    func take(for client: String, now: TimeInterval = ProcessInfo.processInfo.systemUptime) -> Int? {
        let limits = limitsOf?(client)
        return limiter.withLock { $0.take(for: client, now: now, limits: limits) }
    }

    /// Nil when `client` has a token now (none is taken), else the seconds until it has.
    func wait(for client: String, now: TimeInterval = ProcessInfo.processInfo.systemUptime) -> Int? {
        let limits = limitsOf?(client)
        return limiter.withLock { $0.wait(for: client, now: now, limits: limits) }
    }

    /// Charges what a request cost beyond its token. The bucket may go into debt, however
    /// deep: the client's next requests wait it out.
    func charge(for client: String, cost: Double, now: TimeInterval = ProcessInfo.processInfo.systemUptime) {
        let limits = limitsOf?(client)
        limiter.withLock { $0.charge(for: client, cost: cost, now: now, limits: limits) }
    }

    /// A long poll: a token per second it held a connection.
    func charge(for client: String, seconds: Duration, now: TimeInterval = ProcessInfo.processInfo.systemUptime) {
        charge(for: client, cost: seconds.secondsDouble, now: now)
    }
}

/// A token bucket per client, refilled at `rate` tokens a second up to `burst`. Pure:
/// the time comes in as seconds on any monotonic clock.
struct RateLimiter {
    let rate: Double
    let burst: Double
    private var buckets: [String: (tokens: Double, at: TimeInterval)] = [:]
    /// Past this many clients, those idle for a minute whose buckets have refilled are
    /// forgotten (a client still in debt is remembered, or forgetting would forgive it).
    static var forgetAbove: Int { 50_000 }

    init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = burst
    }

    var clientCount: Int { buckets.count }

    /// Takes `cost` more tokens after the fact. The whole charge is carried, however
    /// deep the debt: a client that spent 5,000 at 100 a second waits 50 s, whatever its
    /// burst (issue 45: a floor at minus the burst let a 5,000-marker bulk cost 1.3 s).
    mutating func charge(
        for client: String, cost: Double, now: TimeInterval, limits: (rate: Double, burst: Double)? = nil
    ) {
        let (rate, burst) = limits ?? (self.rate, self.burst)
        var bucket = buckets[client] ?? (burst, now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.at) * rate) - cost
        bucket.at = now
        buckets[client] = bucket
    }

    /// Nil if `client` has a token now (it is not taken), else the whole seconds until it has.
    mutating func wait(for client: String, now: TimeInterval, limits: (rate: Double, burst: Double)? = nil) -> Int? {
        let (rate, burst) = limits ?? (self.rate, self.burst)
        guard let bucket = buckets[client] else { return nil }
        let tokens = min(burst, bucket.tokens + (now - bucket.at) * rate)
        return tokens >= 1 ? nil : max(1, Int(((1 - tokens) / rate).rounded(.up)))
    }

    /// Takes a token; nil if there was one, else the whole seconds until there is.
    mutating func take(for client: String, now: TimeInterval, limits: (rate: Double, burst: Double)? = nil) -> Int? {
        if buckets.count > Self.forgetAbove {
            let (rate, burst) = (self.rate, self.burst)
            buckets = buckets.filter { now - $0.value.at < 60 || $0.value.tokens + (now - $0.value.at) * rate < burst }
        }
        let (rate, burst) = limits ?? (self.rate, self.burst)
        var bucket = buckets[client] ?? (burst, now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.at) * rate)
        bucket.at = now
        defer { buckets[client] = bucket }
        guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
        bucket.tokens -= 1
        return nil
    }
}
