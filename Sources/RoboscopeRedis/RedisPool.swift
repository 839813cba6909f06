import BlockingPool
import Logging
import RoboscopeMetrics
import ServiceLifecycle
import Tracing

/// The Redis connections of a process: a `BlockingPool` of hiredis contexts whose
/// failures all surface as `RedisError`.
public final class RedisPool: Service, Sendable {
    let pool: BlockingPool<RedisConnection>

    public init(endpoint: RedisEndpoint, size: Int, logger: Logger) {
        // Every Redis command we send is safe to repeat after a dead socket refused it
        // (or a demoted master: the retry asks the Sentinels for the new one).
        pool = BlockingPool(name: "redis", size: size, logger: logger, retriesStaleConnections: true) {
            try endpoint.connect()
        }
    }

    public convenience init(url: RedisURL, size: Int, logger: Logger) {
        self.init(endpoint: RedisEndpoint(url: url), size: size, logger: logger)
    }

    public func command(_ arguments: [String]) async throws -> RedisReply {
        try await withConnection(operation: arguments.first) { try $0.command(arguments) }
    }

    /// Runs `body` on a connection of the pool, in a span (`roboscope.redis`) from the
    /// wait for a connection to the job's end; `operation`: its command, when one.
    public func withConnection<T: Sendable>(
        operation: String? = nil, _ body: @escaping @Sendable (RedisConnection) throws -> T
    ) async throws -> T {
        try await SpanRecording.withSpan("roboscope.redis", ofKind: .client) { span in
            span.attributes["db.system"] = "redis"
            if let operation { span.attributes["db.operation"] = operation }
            do {
                return try await pool.withConnection(body)
            } catch let error as BlockingPoolError {
                throw RedisError(.connection, "\(error)")
            }
        }
    }

    /// A member of the service group, listed before everything that uses it: see `BlockingPool.run`.
    public func run() async throws { try await pool.run() }

    /// For one-shot commands outside a service group.
    public func shutdownBlocking() { pool.shutdownBlocking() }
}
