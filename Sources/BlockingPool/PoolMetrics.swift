import Metrics

/// What a pool reports to Prometheus, labelled with the pool's name (postgres, redis):
/// how full it is, how much work waits, and how often the server failed it.
struct PoolMetrics {
    private let busy: Gauge
    private let waiting: Gauge
    private let connectFailures: Counter
    private let dropped: Counter
    private let refused: Counter

    init(name: String, size: Int) {
        let dimensions = [("pool", name)]
        Gauge(label: "roboscope_pool_connections", dimensions: dimensions).record(size)
        busy = Gauge(label: "roboscope_pool_connections_busy", dimensions: dimensions)
        waiting = Gauge(label: "roboscope_pool_jobs_waiting", dimensions: dimensions)
        connectFailures = Counter(label: "roboscope_pool_connect_failures_total", dimensions: dimensions)
        dropped = Counter(label: "roboscope_pool_connections_dropped_total", dimensions: dimensions)
        refused = Counter(label: "roboscope_pool_jobs_refused_total", dimensions: dimensions)
        busy.record(0)
        waiting.record(0)
    }

    func occupancy(busy: Int, waiting: Int) {
        self.busy.record(busy)
        self.waiting.record(waiting)
    }

    func connectFailed() { connectFailures.increment() }

    /// A connection found dead (by the library or by an idle check) and let go.
    func connectionDropped() { dropped.increment() }

    /// A job failed at once because the server could not be reached.
    func jobRefused() { refused.increment() }
}
