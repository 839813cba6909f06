import Logging

/// What the shards share: configuration, the tailer, the presence thread, and the
/// gateway-wide counts.
final class Hub: @unchecked Sendable {
    let configuration: GatewayConfiguration
    let logger: Logger
    let registry = TopicRegistry()
    let clients = ClientCounter()
    let metrics = GatewayMetrics()
    // Set once in `Gateway.init`, before any thread starts.
    var tailer: LogTailer!
    var presence: PresenceWorker!

    init(configuration: GatewayConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }
}
