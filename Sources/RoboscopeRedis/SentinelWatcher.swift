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
    private let endpoint: RedisEndpoint
    private let logger: Logger
    private let started = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    /// Announcements seen for our master (tests wait on it).
    private let switches = Atomic<Int>(0)

    public init(endpoint: RedisEndpoint, logger: Logger) {
        self.endpoint = endpoint
        self.logger = logger
    }

    public var switchesSeen: Int { switches.load(ordering: .acquiring) }

    public func run() async throws {
        start()
        try? await gracefulShutdown()
        await stop()
    }

    /// Starts the thread (once).
    public func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            watch()
            finished.store(true, ordering: .releasing)
        }
        thread.name = "redis-sentinel-watch"
        thread.start()
    }

    /// Stops the thread and waits for it: it notices within one poll (250 ms).
    public func stop() async {
        stopping.store(true, ordering: .releasing)
        while started.load(ordering: .acquiring), !finished.load(ordering: .acquiring) {
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private func watch() {
        var index = 0
        while !stopping.load(ordering: .acquiring) {
            let sentinel = endpoint.sentinels[index % endpoint.sentinels.count]
            index += 1
            do {
                let subscriber = try RedisSubscriber(
                    RedisURL(host: sentinel.host, port: sentinel.port), pattern: "+switch-master")
                while !stopping.load(ordering: .acquiring) {
                    var poller = pollfd(fd: subscriber.socket, events: Int16(POLLIN), revents: 0)
                    guard poll(&poller, 1, 250) > 0 else { continue }
                    for message in try subscriber.messages() {
                        // "<master name> <old ip> <old port> <new ip> <new port>"
                        guard message.payload.split(separator: " ").first.map(String.init) == endpoint.masterName else {
                            continue
                        }
                        endpoint.epoch.advance()
                        switches.add(1, ordering: .releasing)
                        logger.notice(
                            "Redis master switched",
                            metadata: ["announcement": "\(message.payload)", "sentinel": "\(sentinel)"])
                    }
                }
            } catch {
                logger.warning(
                    "Sentinel unreachable for +switch-master",
                    metadata: ["sentinel": "\(sentinel)", "error": "\(error)"])
                // Next Sentinel after a pause, so that all of them down is no busy loop.
                for _ in 0..<4 where !stopping.load(ordering: .acquiring) { usleep(250_000) }
            }
        }
    }
}
