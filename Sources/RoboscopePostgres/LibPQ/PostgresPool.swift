import Foundation
import Logging

/// A fixed set of connections, each driven by a thread of its own, so that libpq's
/// blocking calls never occupy Swift's cooperative pool or an event loop.
///
/// Work is queued; the next free thread runs it on its connection. A broken
/// connection is dropped and made again for the next job; while the server is down,
/// jobs fail at once with a connection error instead of each waiting for a timeout.
public final class PostgresPool: @unchecked Sendable {
    public let url: String
    public let size: Int
    private let logger: Logger
    private let condition = NSCondition()
    private var queue: [Job] = []
    private var head = 0
    private var running = true
    private var lastConnectFailure: (at: ContinuousClock.Instant, error: PGError)?
    private var threads: [Thread] = []
    private var busy = 0

    private typealias Job = (Result<PGConnection, PGError>) -> Void

    /// How long after a failed connect jobs fail fast before the next attempt.
    static let retryInterval: Duration = .milliseconds(500)

    public init(url: String, size: Int, logger: Logger) {
        self.url = url
        self.size = max(1, size)
        self.logger = logger
        for index in 0..<self.size {
            let thread = Thread { [unowned self] in self.work() }
            thread.name = "postgres-\(index)"
            threads.append(thread)
            thread.start()
        }
    }

    /// Runs `body` with a connection of its own on a pool thread.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            enqueue { connection in
                continuation.resume(with: Result { try body(connection.get()) })
            }
        }
    }

    /// Connections in use right now, and the pool size.
    public var usage: (busy: Int, size: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (busy, size)
    }

    /// Stops the threads once the queued work is done.
    public func shutdown() {
        condition.lock()
        running = false
        condition.broadcast()
        condition.unlock()
    }

    private func enqueue(_ job: @escaping Job) {
        condition.lock()
        queue.append(job)
        condition.signal()
        condition.unlock()
    }

    private func nextJob() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while head == queue.count {
            if !running { return nil }
            condition.wait()
        }
        let job = queue[head]
        head += 1
        if head > 1024, head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
        busy += 1
        return job
    }

    private func work() {
        var connection: PGConnection?
        while let job = nextJob() {
            if connection?.isBroken ?? false { connection = nil }
            if connection == nil {
                connection = connect()
            }
            if let connection {
                job(.success(connection))
            } else {
                job(.failure(lastConnectFailure?.error ?? PGError(.connection, "postgres is unreachable")))
            }
            condition.lock()
            busy -= 1
            condition.unlock()
        }
    }

    private func connect() -> PGConnection? {
        condition.lock()
        if let failure = lastConnectFailure, ContinuousClock.now - failure.at < Self.retryInterval {
            condition.unlock()
            return nil
        }
        condition.unlock()
        do {
            let connection = try PGConnection(url)
            try connection.execute("SET TIME ZONE 'UTC'")
            condition.lock()
            if lastConnectFailure != nil {
                logger.info("postgres reachable again")
            }
            lastConnectFailure = nil
            condition.unlock()
            return connection
        } catch {
            let failure = error as? PGError ?? PGError(.connection, "\(error)")
            condition.lock()
            if lastConnectFailure == nil {
                logger.error("postgres unreachable", metadata: ["error": "\(failure.message)"])
            }
            lastConnectFailure = (ContinuousClock.now, failure)
            condition.unlock()
            return nil
        }
    }
}
