import Logging
import RoboscopePostgres
import ServiceLifecycle

/// Removes the answers of idempotency keys older than the retention, every `interval`,
/// for as long as the service group runs. A failed purge (Postgres away) is retried at
/// the next tick: keys only live a little longer.
public struct IdempotencyPurge<C: Clock>: Service where C.Duration == Duration {
    let keys: IdempotencyKeys
    let retention: Duration
    let interval: Duration
    let clock: C
    let logger: Logger

    public init(keys: IdempotencyKeys, retention: Duration, interval: Duration, clock: C, logger: Logger) {
        self.keys = keys
        self.retention = retention
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                let removed = try await keys.purge(olderThan: retention)
                if removed > 0 { logger.debug("purged idempotency keys", metadata: ["count": "\(removed)"]) }
            } catch {
                logger.warning("cannot purge idempotency keys; retrying later", metadata: ["error": "\(error)"])
            }
            do {
                try await cancelWhenGracefulShutdown { try await clock.sleep(for: interval) }
            } catch {
                return
            }
        }
    }
}
