import BlockingPool
import Foundation
import Logging
import ServiceLifecycle

extension PGConnection: BlockingConnection {
    public func check() -> Bool {
        (try? execute("SELECT 1")) != nil
    }
}

/// The Postgres connections of a process: a `BlockingPool` of libpq connections whose
/// failures all surface as `PGError`, so callers have one error type to translate.
///
/// Every statement runs under a `statement_timeout`: the pool's (reads and writes), or a
/// longer one of a view made by `withStatementTimeout` (the audit trail, integrity scans).
/// A task cancelled while its statement runs (a client that went away) cancels the
/// statement on the server (`PQcancel`), instead of letting it run to its end.
public final class PostgresPool: Service, Sendable {
    public let url: String
    let pool: BlockingPool<PGConnection>
    /// This view's `statement_timeout` in milliseconds (nil: none).
    public let statementTimeout: Int?

    public init(url: String, size: Int, statementTimeout: Duration? = nil, logger: Logger) {
        self.url = url
        self.statementTimeout = statementTimeout.map(Self.milliseconds)
        pool = BlockingPool(name: "postgres", size: size, logger: logger) {
            let connection = try PGConnection(url)
            try connection.execute("SET TIME ZONE 'UTC'")
            return connection
        }
    }

    private init(sharing other: PostgresPool, statementTimeout: Int?) {
        url = other.url
        pool = other.pool
        self.statementTimeout = statementTimeout
    }

    /// The same connections, with another statement timeout for what runs through it.
    public func withStatementTimeout(_ timeout: Duration?) -> PostgresPool {
        PostgresPool(sharing: self, statementTimeout: timeout.map(Self.milliseconds))
    }

    static func milliseconds(_ duration: Duration) -> Int {
        max(1, Int(duration.milliseconds))
    }

    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        let running = RunningStatement()
        let timeout = statementTimeout
        do {
            return try await withTaskCancellationHandler {
                try await pool.withConnection { connection in
                    try running.start(on: connection)
                    defer { running.end() }
                    try connection.useStatementTimeout(milliseconds: timeout)
                    return try body(connection)
                }
            } onCancel: {
                running.cancel()
            }
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

/// The connection a pool job is running on, for a cancellation that comes from another
/// thread: before the job starts it is refused; while it runs its statement is cancelled.
final class RunningStatement: @unchecked Sendable {
    private let lock = NSLock()
    private var connection: PGConnection?
    private var cancelled = false

    func start(on connection: PGConnection) throws {
        try lock.withLock {
            if cancelled { throw CancellationError() }
            self.connection = connection
        }
    }

    func end() {
        lock.withLock { connection = nil }
    }

    func cancel() {
        lock.withLock {
            cancelled = true
            connection?.cancelRunningStatement()
        }
    }
}
