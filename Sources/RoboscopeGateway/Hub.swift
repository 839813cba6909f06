import Logging

/// What the shards share: configuration, the tailer, the catch-up reader, the presence
/// thread, and the gateway-wide counts.
final class Hub: Sendable {
    let configuration: GatewayConfiguration
    let logger: Logger
    let registry: TopicRegistry
    let clients = ClientCounter()
    let metrics: GatewayMetrics
    let tailer: LogTailer
    let catchUps: CatchUpReader
    let presence: PresenceWorker
    /// Ops per connection, subject and tenant.
    let budgets: OpBudgets
    /// Refused upgrades and 4001/4003 closes, counted and logged.
    let refusals: RefusalLog

    init(configuration: GatewayConfiguration, logger: Logger, registry: TopicRegistry, metrics: GatewayMetrics,
         tailer: LogTailer, catchUps: CatchUpReader, presence: PresenceWorker) {
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
}
