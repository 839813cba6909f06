import Foundation
import Logging

/// A fixed set of connections to a server spoken to through a blocking C library
/// (libpq, hiredis), each driven by a thread of its own, so that blocking calls never
/// occupy Swift's cooperative pool or an event loop.
///
/// Work is queued; the next free thread runs it on its connection. A broken
/// connection is dropped and made again for the next job; while the server is down,
/// jobs fail at once with the last connect error instead of each waiting for a timeout.
///
/// `@unchecked Sendable`: the queue, the gate and the counts are guarded by
/// `condition`; each connection belongs to the thread that made it.
public final class BlockingPool<Connection: BlockingConnection>: @unchecked Sendable {
    public let size: Int
    private let connect: @Sendable () throws -> Connection
    private let logger: Logger
    private let name: String
    private let condition = NSCondition()
    private var queue: [Job] = []
    private var head = 0
    private var running = true
    private var gate: ReconnectGate<ContinuousClock.Instant>
    private var liveThreads = 0
    private let clock = ContinuousClock()
    private var busy = 0
    private let metrics: PoolMetrics

    private typealias Job = (Lease) -> Void

    /// The thread's connection as one job sees it; `renew` replaces it for the thread.
    private final class Lease {
        var connection: Connection?
        var fresh: Bool
        var failure: (any Error)?
        let connect: () throws -> Connection

        init(connection: Connection?, fresh: Bool, failure: (any Error)?, connect: @escaping () throws -> Connection) {
            self.connection = connection
            self.fresh = fresh
            self.failure = failure
            self.connect = connect
        }

        func get() throws -> (connection: Connection, fresh: Bool) {
            guard let connection else { throw failure ?? BlockingPoolError.unreachable("server") }
            return (connection, fresh)
        }

        func renew() throws -> Connection {
            connection = nil
            let replacement = try connect()
            connection = replacement
            fresh = true
            return replacement
        }
    }
    private let retriesStaleConnections: Bool

    /// How long after a failed connect jobs fail fast before the next attempt.
    public static var retryInterval: Duration { .milliseconds(500) }

    /// `retriesStaleConnections`: when work fails because a connection made before turned
    /// out dead (the server restarted while it sat idle), run it once more on a new one.
    /// Only for work that is safe to repeat after a failure that never reached the server.
    public init(
        name: String, size: Int, logger: Logger, retriesStaleConnections: Bool = false,
        connect: @escaping @Sendable () throws -> Connection
    ) {
        self.retriesStaleConnections = retriesStaleConnections
        self.name = name
        self.size = max(1, size)
        self.logger = logger
        self.connect = connect
        self.metrics = PoolMetrics(name: name, size: self.size)
        gate = ReconnectGate(retryInterval: Self.retryInterval)
        liveThreads = self.size
        for index in 0..<self.size {
            let thread = Thread { [unowned self] in self.work() }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    /// Runs `body` with a connection of its own on a pool thread.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let retries = retriesStaleConnections
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            enqueue { lease in
                continuation.resume(with: Result {
                    let current = try lease.get()
                    do {
                        return try body(current.connection)
                    } catch where retries && !current.fresh && current.connection.isBroken {
                        return try body(try lease.renew())
                    }
                })
            }
        }
    }

    /// Connections in use right now, and the pool size.
    public var usage: (busy: Int, size: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (busy, size)
    }

    /// Stops the threads once the queued work is done, and waits for them (at most
    /// `timeout`: a call stuck on a dead server must not hold up the process's exit).
    public func shutdown(timeout: Duration = .seconds(5)) {
        let deadline = Date(timeIntervalSinceNow: timeout.secondsDouble)
        condition.lock()
        running = false
        condition.broadcast()
        while liveThreads > 0, condition.wait(until: deadline) {}
        let stuck = liveThreads
        condition.unlock()
        if stuck > 0 { logger.warning("\(name) pool stopped with threads still busy", metadata: ["threads": "\(stuck)"]) }
    }

    private func enqueue(_ job: @escaping Job) {
        condition.lock()
        queue.append(job)
        metrics.occupancy(busy: busy, waiting: queue.count - head)
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
        metrics.occupancy(busy: busy, waiting: queue.count - head)
        return job
    }

    /// A connection idle for longer is checked before use: the server may have gone
    /// away (and come back) while it sat unused, which only a round trip reveals.
    public static var idleCheckInterval: Duration { .seconds(2) }

    private func work() {
        defer {
            condition.lock()
            liveThreads -= 1
            condition.broadcast()
            condition.unlock()
        }
        var connection: Connection?
        var lastUsed = clock.now
        while let job = nextJob() {
            if let current = connection {
                let check = ConnectionCheck.before(
                    broken: current.isBroken, lastUsed: lastUsed, now: clock.now, idleCheckInterval: Self.idleCheckInterval)
                if check == .replace || (check == .ping && !current.check()) {
                    connection = nil
                    metrics.connectionDropped()
                }
            }
            var fresh = false
            if connection == nil {
                connection = makeConnection()
                fresh = connection != nil
            }
            lastUsed = clock.now
            condition.lock()
            let failure = connection == nil ? (gate.lastFailure?.error ?? BlockingPoolError.unreachable(name)) : nil
            condition.unlock()
            if failure != nil { metrics.jobRefused() }
            let lease = Lease(connection: connection, fresh: fresh, failure: failure) { [unowned self] in
                try self.connectRecordingOutcome()
            }
            job(lease)
            connection = lease.connection
            condition.lock()
            busy -= 1
            metrics.occupancy(busy: busy, waiting: queue.count - head)
            condition.unlock()
        }
    }

    private func makeConnection() -> Connection? {
        condition.lock()
        let refused = gate.failFast(now: clock.now) != nil
        condition.unlock()
        if refused { return nil }
        return try? connectRecordingOutcome()
    }

    /// Connects, and remembers the outcome for every thread: a success ends fail-fast.
    private func connectRecordingOutcome() throws -> Connection {
        do {
            let connection = try connect()
            condition.lock()
            let recovered = gate.connected()
            condition.unlock()
            if recovered { logger.info("\(name) reachable again") }
            return connection
        } catch {
            condition.lock()
            let outage = gate.failed(error, now: clock.now)
            condition.unlock()
            if outage { logger.error("\(name) unreachable", metadata: ["error": "\(error)"]) }
            metrics.connectFailed()
            throw error
        }
    }
}

/// A connection the pool can tell is dead, so that it makes a new one.
public protocol BlockingConnection: AnyObject {
    /// Known dead, without asking the server.
    var isBroken: Bool { get }
    /// Asks the server (a round trip); false when the connection no longer works.
    func check() -> Bool
}

public enum BlockingPoolError: Error, CustomStringConvertible {
    case unreachable(String)

    public var description: String {
        switch self {
        case .unreachable(let name): return "\(name) is unreachable"
        }
    }
}
