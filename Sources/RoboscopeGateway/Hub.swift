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
    /// Ops per subject (`tenant/subject`) and per tenant, gateway-wide.
    let subjectBudgets: SubjectBudgets
    let tenantBudgets: SubjectBudgets

    init(configuration: GatewayConfiguration, logger: Logger, registry: TopicRegistry, metrics: GatewayMetrics,
         tailer: LogTailer, catchUps: CatchUpReader, presence: PresenceWorker) {
        self.configuration = configuration
        self.logger = logger
        self.registry = registry
        self.metrics = metrics
        self.tailer = tailer
        self.catchUps = catchUps
        self.presence = presence
        subjectBudgets = SubjectBudgets(rate: configuration.subjectOpRate, burst: configuration.subjectOpBurst)
        tenantBudgets = SubjectBudgets(rate: configuration.tenantOpRate, burst: max(1, configuration.tenantOpRate * 2))
    }
}
