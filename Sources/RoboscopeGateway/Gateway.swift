import Foundation
import Logging
import RoboscopeDomain
import RoboscopeRedis
import ServiceLifecycle
import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// The WebSocket gateway as a service: a listening socket, one event loop per
/// thread, the log tailer, the catch-up reader and the presence thread. On graceful shutdown (SIGTERM) it
/// stops accepting, closes every connection with 1001, and waits for the close
/// handshakes (at most a few seconds).
public final class Gateway: Service, Sendable {
    private let hub: Hub
    /// Each shard's loop parts, made here so that a failure is the constructor's; the
    /// shards themselves are made on their threads (`run`).
    private let loops: [EventLoop<ShardMessage>.Parts]
    private let shards: [ShardMailbox]
    private let listener: Int32
    /// The port actually bound (differs from the configured one when that is 0).
    public let port: Int

    public init(
        configuration given: GatewayConfiguration, databaseURL: String, redis: RedisEndpoint, presence: PresenceStore,
        logger: Logger
    ) throws {
        let limit = FileLimit.raiseToHardLimit()
        var configuration = given
        configuration.maxConnections = min(given.maxConnections, Self.connectionCeiling(fileLimit: limit))
        let registry = TopicRegistry()
        let metrics = GatewayMetrics()
        let directory = ConnectionDirectory(
            gateway: "\(ProcessInfo.processInfo.hostName):\(getpid())",
            keys: ConnectionDirectoryKeys(deployment: configuration.deploymentName))
        let hub = Hub(
            configuration: configuration, logger: logger, registry: registry, metrics: metrics,
            tailer: try LogTailer(
                databaseURL: databaseURL, configuration: configuration, registry: registry, metrics: metrics,
                logger: logger),
            catchUps: try CatchUpReader(
                databaseURL: databaseURL, configuration: configuration, metrics: metrics, logger: logger),
            presence: try PresenceWorker(
                endpoint: redis, store: presence, configuration: configuration, registry: registry,
                directory: directory, logger: logger),
            directory: directory)
        // The shards reach the tailer and the presence thread through the hub; the workers
        // answer and deliver to the shards' mailboxes.
        let loops = try (0..<max(1, configuration.threads)).map { _ in try EventLoop<ShardMessage>.Parts() }
        let shards = loops.indices.map { ShardMailbox(address: ShardAddress(index: $0), inbox: loops[$0].inbox) }
        self.hub = hub
        self.loops = loops
        self.shards = shards
        listener = try Socket.listen(
            host: configuration.host, port: configuration.port, reusePort: configuration.reusePort)
        port = Socket.localPort(listener)
        if let verifier = configuration.authentication {
            // Within the listener's wake-up of a revocation or a key set's reload, on every loop.
            verifier.revocations.observe { [shards] revocations in
                for shard in shards {
                    shard.post(
                        .end(.revoked, "revoked") { principal in revocations.contains { $0.matches(principal) } })
                }
            }
            verifier.observeKeySets { [shards] issuer, keyIDs in
                for shard in shards {
                    shard.post(
                        .end(.keyRetired, "key retired") { principal in
                            guard issuer == nil || principal.issuer == issuer, let keyID = principal.keyID else {
                                return false
                            }
                            return !keyIDs.contains(keyID)
                        })
                }
            }
        }
        logger.info(
            "gateway listening",
            metadata: [
                "ws": "\(configuration.host):\(port)", "threads": "\(shards.count)", "open_files": "\(limit)",
                "max_connections": "\(configuration.maxConnections)",
            ])
    }

    /// WebSocket connections a process with `fileLimit` descriptors holds: the rest, an
    /// eighth of them (at most 2,048, at least 128), stays in reserve for the HTTP side,
    /// the database and Redis connections and the logs, so a full gateway never takes the
    /// probes and the pools down with it.
    static func connectionCeiling(fileLimit: Int) -> Int {
        guard fileLimit > 0 else { return Int.max }
        return max(1, fileLimit - min(2048, max(128, fileLimit / 8)))
    }

    public var metrics: GatewayMetrics.Snapshot { hub.metrics.snapshot }

    public func run() async throws {
        hub.tailer.start(delivering: shards)
        hub.catchUps.start()
        hub.presence.start(delivering: shards)
        let threads = shards.map { mailbox in
            JoinableThread(name: "ws-loop-\(mailbox.address.index)", stackSize: 1 << 20) {
                [hub, listener, parts = loops[mailbox.address.index]] in
                Shard(address: mailbox.address, parts: parts, listener: listener, hub: hub).run()
            }
        }
        try? await gracefulShutdown()
        await shutdown(threads)
    }

    private func shutdown(_ threads: [JoinableThread]) async {
        for shard in shards {
            shard.post(.closeAll)
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(3)
        while clock.now < deadline, hub.metrics.snapshot.openConnections > 0 {
            try? await Task.sleep(for: .milliseconds(20))
        }
        for (shard, thread) in zip(shards, threads) {
            shard.post(.terminateAll)
            shard.inbox.close()
            await thread.join()
        }
        close(listener)
        await hub.tailer.stop()
        await hub.catchUps.stop()
        await hub.presence.stop()
        hub.logger.info("gateway stopped", metadata: ["metrics": "\(hub.metrics.snapshot)"])
    }
}
