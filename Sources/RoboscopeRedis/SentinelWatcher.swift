import BlockingPool
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Listens to the Sentinels' `+switch-master` announcements and moves the endpoint's
/// epoch when its master changes, so that every pooled connection to the old master is
/// replaced before its next command instead of failing on it first. Correctness does
/// not depend on it (a dead or demoted master fails the connection, which then asks the
/// Sentinels); it makes a failover cost one round of reconnects instead of one failed
/// request per connection.
///
/// One thread, subscribed to one Sentinel at a time, moving to the next when that one
/// fails; it stops with the service group.
public final class SentinelWatcher: Service, Sendable {
    /// Announcements seen for our master (tests wait on it).
    private let switches = SharedAtomic(0)
    private let thread: ReconnectingThread<RedisSubscriber>

    public init(endpoint: RedisEndpoint, logger: Logger) {
        let switches = switches
        // Which Sentinel the next subscription asks: each failure moves to the next.
        let attempts = SharedAtomic(0)
        thread = ReconnectingThread(
            name: "redis-sentinel-watch", logger: logger, lossLevel: .warning,
            connect: {
                let index = attempts.value.add(1, ordering: .relaxed).oldValue
                let sentinel = endpoint.sentinels[index % endpoint.sentinels.count]
                return try RedisSubscriber(
                    RedisURL(host: sentinel.host, port: sentinel.port), pattern: "+switch-master")
            },
            body: { subscriber, stopped in
                while !stopped.isStopped {
                    // Polled, so that a stop is noticed within 250 ms.
                    var poller = pollfd(fd: subscriber.socket, events: Int16(POLLIN), revents: 0)
                    guard poll(&poller, 1, 250) > 0 else { continue }
                    for message in try subscriber.messages() {
                        // "<master name> <old ip> <old port> <new ip> <new port>"
                        guard message.payload.split(separator: " ").first.map(String.init) == endpoint.masterName else {
                            continue
                        }
                        endpoint.epoch.advance()
                        switches.value.add(1, ordering: .releasing)
                        logger.notice("Redis master switched", metadata: ["announcement": "\(message.payload)"])
                    }
                }
            }
        )
    }

    public var switchesSeen: Int { switches.value.load(ordering: .acquiring) }

    public func run() async throws {
        start()
        try? await gracefulShutdown()
        await stop()
    }

    /// Starts the thread (once).
    public func start() {
        thread.start()
    }

    /// Stops the thread and waits for it: it notices within one poll (250 ms).
    public func stop() async {
        await thread.stop()
    }
}
