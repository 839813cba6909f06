import BlockingPool
import Foundation
import Logging
import RoboscopeDomain
import RoboscopeMetrics
import ServiceLifecycle
import Tracing

extension PGConnection: BlockingConnection {
    public func check() -> Bool {
        (try? execute("SELECT 1")) != nil
    }
}

/// The Postgres connections of a process: a `BlockingPool` of libpq connections whose
/// failures all surface as `PGError`, so callers have one error type to translate.
///
/// Every statement runs under the pool's `statement_timeout`: a process keeps one pool
/// for requests and one for reports (the audit trail, histories, `as_of` reads,
/// integrity scans), with a longer bound, so that requests never wait behind a report.
/// Both share their connections fairly between tenants (`tenantShare`).
/// A task cancelled while its statement runs (a client that went away) cancels the
/// statement on the server (`PQcancel`), instead of letting it run to its end.
public final class PostgresPool: Service, Sendable {
    public let url: String
    let pool: BlockingPool<PGConnection>
    /// This view's `statement_timeout` in milliseconds (nil: none).
    public let statementTimeout: Int?
    /// The pool's name in metrics and spans (`postgres`, `postgres_reports`, ...).
    public let name: String

    /// `tenantShare`: the part of the connections one tenant's requests may hold at once
    /// (`BlockingPool`'s `ownerShare`).
    public init(
        url: String, size: Int, statementTimeout: Duration? = nil, tenantShare: Double = 1,
        plans: TenantPlans? = nil, name: String = "postgres", logger: Logger
    ) {
        self.url = url
        self.name = name
        self.statementTimeout = statementTimeout.map(Self.milliseconds)
        var shareOf: (@Sendable (String) -> Double?)?
        if let plans {
            shareOf = { @Sendable tenant in plans.plan(for: tenant).dbShare }
        }
        pool = BlockingPool(
            name: name, size: size, logger: logger, ownerShare: tenantShare, shareOf: shareOf,
            tenantTime: .shared
        ) {
            let connection = try PGConnection(url)
            try connection.execute("SET TIME ZONE 'UTC'")
            return connection
        }
    }

    static func milliseconds(_ duration: Duration) -> Int {
        max(1, Int(duration.milliseconds))
    }

    /// Runs `body` on a connection of the pool, in a span (`roboscope.db`) from the wait
    /// for a connection to the job's end.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        let running = RunningStatement()
        let timeout = statementTimeout
        return try await SpanRecording.withSpan("roboscope.db", ofKind: .client) { span in
            span.attributes["db.system"] = "postgresql"
            span.attributes["roboscope.pool"] = name
            if let tenant = PoolShare.owner { span.attributes["roboscope.tenant"] = tenant }
            do {
                return try await withTaskCancellationHandler {
                    try await pool.withConnection { connection in
                        try running.start(on: connection)
                        defer { running.end() }
                        try connection.useStatementTimeout(milliseconds: timeout)
                        guard span.isRecording else { return try body(connection) }
                        connection.startNotingOperations()
                        defer {
                            let (operations, statements) = connection.endNotingOperations()
                            span.attributes["db.operation"] = operations
                            span.attributes["roboscope.statements"] = statements
                        }
                        return try body(connection)
                    }
                } onCancel: {
                    running.cancel()
                }
            } catch let error as BlockingPoolError {
                throw PGError(.connection, "\(error)")
            }
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
