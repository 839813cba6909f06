import Metrics
import Synchronization

/// The series an operator reads per tenant (docs/operations.md, "Running many customers"):
/// requests by outcome, events appended, open WebSocket connections and the time its work
/// held database connections. One per process, as swift-metrics' own system is: the HTTP
/// routes, the pools and the gateway each record into it without passing it along.
public final class TenantMetrics: Sendable {
    public static let shared = TenantMetrics(labels: TenantLabels(limit: 100))

    /// What became of a request, as `roboscope_tenant_requests_total` counts it.
    public enum Outcome: String, Sendable, CaseIterable {
        case ok
        case clientError = "client_error"
        case rateLimited = "rate_limited"
        case unauthorized, forbidden
        case serverError = "server_error"

        /// By the answer's status: 2xx and 3xx `ok`; 401, 403, 429 their own; 5xx `server_error`.
        public init(status: Int) {
            switch status {
            case ..<400: self = .ok
            case 401: self = .unauthorized
            case 403: self = .forbidden
            case 429: self = .rateLimited
            case 500...: self = .serverError
            default: self = .clientError
            }
        }
    }

    public let labels: TenantLabels
    private let requests = Mutex<[String: Counter]>([:])
    private let appended = Mutex<[String: Counter]>([:])
    private let databaseSeconds = Mutex<[String: FloatingPointCounter]>([:])
    private let connections = Mutex<[String: (count: Int, gauge: Gauge)]>([:])

    public init(labels: TenantLabels) {
        self.labels = labels
    }

    /// One answered request of `tenant` ("" when no principal was verified).
    public func request(tenant: String, outcome: Outcome) {
        let label = labels.label(for: tenant)
        let key = label + "\u{0}" + outcome.rawValue
        series(key, in: requests) {
            Counter(
                label: "roboscope_tenant_requests_total",
                dimensions: [("tenant", label), ("outcome", outcome.rawValue)])
        }.increment()
    }

    /// Events a commit appended for `tenant`.
    public func appended(tenant: String, count: Int) {
        let label = labels.label(for: tenant)
        series(label, in: appended) {
            Counter(label: "roboscope_tenant_events_appended_total", dimensions: [("tenant", label)])
        }.increment(by: count)
    }

    /// Time one job of `tenant`'s held a database connection.
    public func heldDatabase(tenant: String, seconds: Double) {
        let label = labels.label(for: tenant)
        series(label, in: databaseSeconds) {
            FloatingPointCounter(label: "roboscope_tenant_db_seconds_total", dimensions: [("tenant", label)])
        }.increment(by: seconds)
    }

    /// A WebSocket connection of `tenant` authenticated (+1) or closed (-1).
    public func connections(tenant: String, change: Int) {
        let label = labels.label(for: tenant)
        connections.withLock { table in
            var entry =
                table[label]
                ?? (0, Gauge(label: "roboscope_tenant_ws_connections", dimensions: [("tenant", label)]))
            entry.count = max(0, entry.count + change)
            entry.gauge.record(entry.count)
            table[label] = entry
        }
    }

    private func series<Series>(
        _ key: String, in table: borrowing Mutex<[String: Series]>, make: () -> Series
    ) -> Series {
        table.withLock { table in
            if let series = table[key] { return series }
            let series = make()
            table[key] = series
            return series
        }
    }
}
