import BlockingPool
import Logging
import ServiceLifecycle

extension PGConnection: BlockingConnection {
    public func check() -> Bool {
        (try? execute("SELECT 1")) != nil
    }
}

/// The Postgres connections of a process: a `BlockingPool` of libpq connections whose
/// failures all surface as `PGError`, so callers have one error type to translate.
public final class PostgresPool: Service, Sendable {
    public let url: String
    let pool: BlockingPool<PGConnection>

    public init(url: String, size: Int, logger: Logger) {
        self.url = url
        pool = BlockingPool(name: "postgres", size: size, logger: logger) {
            let connection = try PGConnection(url)
            try connection.execute("SET TIME ZONE 'UTC'")
            return connection
        }
    }

    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        do {
            return try await pool.withConnection(body)
        } catch let error as BlockingPoolError {
            throw PGError(.connection, "\(error)")
        }
    }

    public var usage: (busy: Int, size: Int) { pool.usage }

    /// A member of the service group, listed before everything that uses it: see `BlockingPool.run`.
    public func run() async throws { try await pool.run() }

    /// For one-shot commands outside a service group.
    public func shutdownBlocking() { pool.shutdownBlocking() }
}
