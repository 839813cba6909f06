import BlockingPool
import Hummingbird
import Metrics
import RoboscopeDomain
import Synchronization

/// At most `perTenant` heavy requests of one tenant run at once: lists that may return
/// thousands of rows, `as_of` replays, audit pages, histories, integrity checks and
/// bulks. The rest wait in the tenant's own line (at most `maxWaiting`, past it 429
/// `limit: tenant`); tenants with requests waiting are served in turn. The database's
/// share bounds a tenant's statements; this bounds its rendering, which on few cores
/// took the CPU another tenant's small requests needed (the fairshare benchmark: B's
/// p99 went from 7 ms to 212 ms under A's lists of 10,000 markers).
public final class HeavyRequestShare: Sendable {
    public let perTenant: Int
    public let maxWaiting: Int
    private let lines: Mutex<FairQueue<CheckedContinuation<Bool, Never>>>
    private let waitingGauge = Gauge(label: "roboscope_heavy_requests_waiting")
    private let refused = Counter(label: "roboscope_rate_limited_total", dimensions: [("limit", "tenant")])

    public init(perTenant: Int, maxWaiting: Int = 256) {
        self.perTenant = max(1, perTenant)
        self.maxWaiting = maxWaiting
        lines = Mutex(FairQueue(maxRunningPerOwner: self.perTenant))
        waitingGauge.record(0)
    }

    /// Waits for the tenant's turn; false when its line is full (nothing was taken).
    func enter(_ tenant: String) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let (admitted, ready) = lines.withLock { lines -> (Bool, [CheckedContinuation<Bool, Never>]) in
                guard lines.waitingCount(of: tenant) < maxWaiting else { return (false, []) }
                lines.append(continuation, owner: tenant)
                defer { waitingGauge.record(lines.count) }
                return (true, Self.runnable(&lines))
            }
            if !admitted {
                refused.increment()
                continuation.resume(returning: false)
            }
            for waiter in ready { waiter.resume(returning: true) }
        }
    }

    /// The tenant's heavy request is done: the next waiting one may start.
    func leave(_ tenant: String) {
        let ready = lines.withLock { lines in
            lines.finished(owner: tenant)
            defer { waitingGauge.record(lines.count) }
            return Self.runnable(&lines)
        }
        for waiter in ready { waiter.resume(returning: true) }
    }

    private static func runnable(
        _ lines: inout FairQueue<CheckedContinuation<Bool, Never>>
    ) -> [CheckedContinuation<Bool, Never>] {
        var ready: [CheckedContinuation<Bool, Never>] = []
        while let next = lines.take() { ready.append(next.item) }
        return ready
    }

    var waiting: Int { lines.withLock { $0.count } }

    /// Whether a request is heavy: what it may read or write grows with the data, not
    /// with the request.
    static func isHeavy(_ request: Request) -> Bool {
        let path = request.uri.path
        switch request.method {
        case .post:
            return path.hasSuffix("/markers/bulk")
        case .get:
            if path.hasSuffix("/history") || path.hasSuffix("/audit") || path.hasSuffix("/integrity") { return true }
            let query = request.uri.queryParameters
            if query["as_of"] != nil { return true }
            guard path.hasSuffix("/markers") || path.hasSuffix("/spaces") || path.hasSuffix("/work-sessions") else {
                return false
            }
            // A list without a limit returns up to 10,000 rows.
            guard let limit = query["limit"].flatMap({ Int(String($0)) }) else { return true }
            return limit > 1000
        default:
            return false
        }
    }
}

/// Runs a heavy request in its tenant's turn (HeavyRequestShare).
struct HeavyRequestMiddleware: APIMiddleware {
    let share: HeavyRequestShare

    func handle(_ request: Request, context: Context, next: Next) async throws -> Response {
        guard HeavyRequestShare.isHeavy(request) else { return try await next(request, context) }
        let tenant = context.principal.tenant
        guard await share.enter(tenant) else {
            let message =
                "\(share.maxWaiting) heavy requests (large lists, reports, bulks) of this tenant "
                + "wait already; retry in 1 s"
            throw DomainError(.rateLimited, message, details: ["retry_after": .integer(1), "limit": .string("tenant")])
        }
        defer { share.leave(tenant) }
        return try await next(request, context)
    }
}
