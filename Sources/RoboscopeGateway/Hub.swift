import Logging
import Synchronization

/// What the shards share: configuration, the tailer, the catch-up reader, the presence
/// thread, and the gateway-wide counts.
final class Hub: Sendable {
    let configuration: GatewayConfiguration
    let logger: Logger
    let registry: TopicRegistry
    let clients = ClientCounter()
    /// Connections held or being accepted, by every shard: a shard reserves a place before
    /// its `accept`, so that two shards at the ceiling's edge never both take the last one.
    private let places = Atomic(0)
    /// Authenticated connections per tenant, in every shard (a plan's `max_connections`).
    let tenants = ClientCounter()
    let metrics: GatewayMetrics
    let tailer: LogTailer
    let catchUps: CatchUpReader
    let presence: PresenceWorker
    /// Ops per connection, subject and tenant.
    let budgets: OpBudgets
    /// Refused upgrades and 4001/4003 closes, counted and logged.
    let refusals: RefusalLog
    /// The open connections an operator lists, published by the presence thread.
    let directory: ConnectionDirectory

    init(
        configuration: GatewayConfiguration, logger: Logger, registry: TopicRegistry, metrics: GatewayMetrics,
        tailer: LogTailer, catchUps: CatchUpReader, presence: PresenceWorker, directory: ConnectionDirectory
    ) {
        self.directory = directory
        self.configuration = configuration
        self.logger = logger
        self.registry = registry
        self.metrics = metrics
        self.tailer = tailer
        self.catchUps = catchUps
        self.presence = presence
        budgets = OpBudgets(configuration: configuration)
        refusals = RefusalLog(logger: logger, perSecond: configuration.logRefusalsPerSecond)
    }

    var placesTaken: Int { places.load(ordering: .relaxed) }

    /// Takes a place for one more connection if fewer than `ceiling` are taken.
    func takePlace(below ceiling: Int) -> Bool {
        var current = places.load(ordering: .relaxed)
        while current < ceiling {
            let (exchanged, original) = places.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func releasePlace() {
        places.subtract(1, ordering: .relaxed)
    }
}
