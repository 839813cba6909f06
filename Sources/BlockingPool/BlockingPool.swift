import Dispatch
import Foundation
import Logging
import RoboscopeMetrics
import ServiceLifecycle
import Synchronization

/// A fixed set of connections to a server spoken to through a blocking C library
/// (libpq, hiredis), each driven by a thread of its own, so that blocking calls never
/// occupy Swift's cooperative pool or an event loop.
///
/// Work is queued; the thread that became free last runs it on its connection, so that
/// work one request after another stays on one warm connection (its prepared statements,
/// its server-side caches) instead of going round every connection and pinging the ones
/// idle for too long. A broken connection is dropped and made again for the next job;
/// while the server is down, jobs fail at once with the last connect error instead of
/// each waiting for a timeout.
///
/// The threads start in `run`, or with the first job when nothing runs the pool (a
/// one-shot command such as `replay`, which stops it with `shutdownBlocking`). In `serve`
/// the pool is a member of the service group, listed first: the group stops it last,
/// after every service that queues work on it, and its `run` then lets the queued work
/// finish and joins the threads.
public final class BlockingPool<Connection: BlockingConnection>: Service, Sendable {
    public let size: Int
    private let connect: @Sendable () throws -> Connection
    private let logger: Logger
    private let name: String
    let state: Mutex<State>
    /// One per thread, signalled once each time the thread is taken off the idle stack.
    private let wakeups: [DispatchSemaphore]
    /// Entered once per thread, left as its last act.
    private let threadsRunning = DispatchGroup()
    private let clock = ContinuousClock()
    private let metrics: PoolMetrics
    private let retriesStaleConnections: Bool
    private let tenantTime: TenantMetrics?

    /// Runs the work and returns how to hand its result over: the thread counts itself
    /// free before the caller resumes, so that the caller's next job finds it.
    typealias Job = @Sendable (Lease) -> @Sendable () -> Void

    struct State {
        var queue: FairQueue<Job>
        var running = true
        var started = false
        var busy = 0
        /// Threads waiting for work, the one that became free last on top.
        var idle: [Int] = []
        var gate: ReconnectGate<ContinuousClock.Instant>

        var waiting: Int { queue.count }

        mutating func take() -> (job: Job, owner: String?)? {
            guard let next = queue.take() else { return nil }
            busy += 1
            return (next.item, next.owner)
        }
    }

    /// The thread's connection as one job sees it; `renew` replaces it for the thread.
    final class Lease {
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

    /// How long after a failed connect jobs fail fast before the next attempt.
    public static var retryInterval: Duration { .milliseconds(500) }

    /// `retriesStaleConnections`: when work fails because a connection made before turned
    /// out dead (the server restarted while it sat idle), run it once more on a new one.
    /// Only for work that is safe to repeat after a failure that never reached the server.
    ///
    /// `ownerShare`: the part of the connections one owner's work (`PoolShare.owner`, a
    /// tenant) may hold at once, at least one; the rest waits in a fair queue. `shareOf`:
    /// an owner's own part (a tenant's plan), when it names one.
    ///
    /// `tenantTime`: the time each owner's jobs hold a connection is added to its
    /// `roboscope_tenant_db_seconds_total` (the database pools; not Redis).
    public init(
        name: String, size: Int, logger: Logger, retriesStaleConnections: Bool = false, ownerShare: Double = 1,
        shareOf: (@Sendable (String) -> Double?)? = nil, tenantTime: TenantMetrics? = nil,
        connect: @escaping @Sendable () throws -> Connection
    ) {
        self.tenantTime = tenantTime
        self.retriesStaleConnections = retriesStaleConnections
        self.name = name
        self.size = max(1, size)
        self.logger = logger
        self.connect = connect
        self.metrics = PoolMetrics(name: name, size: self.size)
        wakeups = (0..<self.size).map { _ in DispatchSemaphore(value: 0) }
        let perOwner = Int((Double(self.size) * min(1, max(0, ownerShare))).rounded(.down))
        let connections = self.size
        var limitOf: (@Sendable (String) -> Int?)?
        if let shareOf {
            limitOf = { @Sendable owner in
                guard let share = shareOf(owner) else { return nil }
                return Int((Double(connections) * min(1, max(0, share))).rounded(.down))
            }
        }
        state = Mutex(
            State(
                queue: FairQueue(maxRunningPerOwner: perOwner, limitOf: limitOf),
                gate: ReconnectGate(retryInterval: Self.retryInterval)))
    }

    /// Starts the threads, once: while the pool runs, or when it stopped with work queued
    /// (a job accepted just before a shutdown that came first to the lock), so that the
    /// job is still run.
    private func startThreads() {
        let starts = state.withLock { state in
            guard !state.started, state.running || state.waiting > 0 else { return false }
            state.started = true
            return true
        }
        guard starts else { return }
        for index in 0..<size {
            threadsRunning.enter()
            let thread = Thread { [self] in
                work(thread: index)
                threadsRunning.leave()
            }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    /// Runs `body` with a connection of its own on a pool thread.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let retries = retriesStaleConnections
        let owner = PoolShare.owner
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let job: Job = { lease in
                let result = Result {
                    let current = try lease.get()
                    do {
                        return try body(current.connection)
                    } catch  where retries && !current.fresh && current.connection.isBroken {
                        return try body(try lease.renew())
                    }
                }
                return { continuation.resume(with: result) }
            }
            if !enqueue(job, owner: owner) { continuation.resume(throwing: BlockingPoolError.stopped(name)) }
        }
    }

    /// Connections in use right now, and the pool size.
    public var usage: (busy: Int, size: Int) {
        (state.withLock { $0.busy }, size)
    }

    /// Serves until the group shuts down or is cancelled, then stops the pool.
    public func run() async throws {
        startThreads()
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Stops the threads once the queued work is done, and waits for them (at most
    /// `timeout`: a call stuck on a dead server must not hold up the process's exit)
    /// without blocking a thread of the cooperative pool.
    public func shutdown(timeout: Duration = .seconds(5)) async {
        stopThreads()
        let joined = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let waiter = JoinWaiter(continuation)
            threadsRunning.notify(queue: .global()) { waiter.resume(joined: true) }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout.secondsDouble) { waiter.resume(joined: false) }
        }
        if !joined { logStuck() }
    }

    /// `shutdown` for a caller outside async code (a one-shot command's `defer`).
    public func shutdownBlocking(timeout: Duration = .seconds(5)) {
        stopThreads()
        if threadsRunning.wait(timeout: .now() + timeout.secondsDouble) == .timedOut { logStuck() }
    }

    private func stopThreads() {
        let idle = state.withLock { state in
            state.running = false
            defer { state.idle = [] }
            return state.idle
        }
        for thread in idle { wakeups[thread].signal() }
    }

    private func logStuck() {
        logger.warning("\(name) pool stopped with threads still busy", metadata: ["busy": "\(usage.busy)"])
    }

    /// False once the pool has stopped: no thread would take the job.
    /// A thread is woken only when the job may start now: one whose owner is at its
    /// share starts when that owner's running work ends, on the thread that ran it.
    private func enqueue(_ job: @escaping Job, owner: String?) -> Bool {
        let (accepted, unstarted, woken) = state.withLock { state -> (Bool, Bool, Int?) in
            guard state.running else { return (false, false, nil) }
            let runnable = state.queue.append(job, owner: owner)
            metrics.occupancy(busy: state.busy, waiting: state.waiting)
            return (true, !state.started, runnable ? state.idle.popLast() : nil)
        }
        if unstarted { startThreads() }
        if let woken { wakeups[woken].signal() }
        return accepted
    }

    private enum Turn {
        case run(Job, owner: String?)
        case wait
        case stop
    }

    /// Under the lock: a queued job whose owner is under its share, the end once the pool
    /// has stopped and its queue is drained, or else the thread goes on top of the idle
    /// stack. A thread is signalled only when taken off the stack, so a wait never misses
    /// its job or the stop. When more work could start, one idle thread is woken for it
    /// (and it wakes the next), since an owner's finished job can free several.
    ///
    /// `finishedJob`: the thread has just run one of `owner`'s jobs.
    private func turn(of thread: Int, finishedJob: Bool, owner: String? = nil) -> Turn {
        let (turn, woken) = state.withLock { state -> (Turn, Int?) in
            if finishedJob {
                state.busy -= 1
                state.queue.finished(owner: owner)
            }
            defer { metrics.occupancy(busy: state.busy, waiting: state.waiting) }
            if let next = state.take() {
                let woken = state.queue.hasRunnable ? state.idle.popLast() : nil
                return (.run(next.job, owner: next.owner), woken)
            }
            guard state.running else { return (.stop, nil) }
            state.idle.append(thread)
            return (.wait, nil)
        }
        if let woken { wakeups[woken].signal() }
        return turn
    }

    /// The next job, or nil when the pool has stopped and its queue is drained.
    private func nextJob(of thread: Int, after first: Turn) -> (job: Job, owner: String?)? {
        var current = first
        while true {
            switch current {
            case .run(let job, let owner): return (job, owner)
            case .stop: return nil
            case .wait:
                wakeups[thread].wait()
                current = turn(of: thread, finishedJob: false)
            }
        }
    }

    /// A connection idle for longer is checked before use: the server may have gone
    /// away (and come back) while it sat unused, which only a round trip reveals.
    public static var idleCheckInterval: Duration { .seconds(2) }

    private func work(thread: Int) {
        var connection: Connection?
        var lastUsed = clock.now
        var next = nextJob(of: thread, after: turn(of: thread, finishedJob: false))
        while let (job, owner) = next {
            if let current = connection {
                let check = ConnectionCheck.before(
                    broken: current.isBroken, lastUsed: lastUsed, now: clock.now,
                    idleCheckInterval: Self.idleCheckInterval)
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
            let failure =
                connection == nil
                ? (state.withLock { $0.gate.lastFailure?.error } ?? BlockingPoolError.unreachable(name)) : nil
            if failure != nil { metrics.jobRefused() }
            let lease = Lease(connection: connection, fresh: fresh, failure: failure) { [self] in
                try connectRecordingOutcome()
            }
            let started = clock.now
            let handOver = job(lease)
            if let tenantTime, let owner {
                tenantTime.heldDatabase(tenant: owner, seconds: (clock.now - started).secondsDouble)
            }
            connection = lease.connection
            let after = turn(of: thread, finishedJob: true, owner: owner)
            handOver()
            next = nextJob(of: thread, after: after)
        }
    }

    private func makeConnection() -> Connection? {
        let refused = state.withLock { $0.gate.failFast(now: clock.now) != nil }
        if refused { return nil }
        return try? connectRecordingOutcome()
    }

    /// Connects, and remembers the outcome for every thread: a success ends fail-fast.
    private func connectRecordingOutcome() throws -> Connection {
        do {
            let connection = try connect()
            if state.withLock({ $0.gate.connected() }) { logger.info("\(name) reachable again") }
            return connection
        } catch {
            let now = clock.now
            if state.withLock({ $0.gate.failed(error, now: now) }) {
                logger.error("\(name) unreachable", metadata: ["error": "\(error)"])
            }
            metrics.connectFailed()
            throw error
        }
    }
}

/// Resumed once, by whichever comes first: the threads' end or the timeout.
private final class JoinWaiter: Sendable {
    private let continuation: Mutex<CheckedContinuation<Bool, Never>?>

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation = Mutex(continuation)
    }

    func resume(joined: Bool) {
        continuation.withLock { $0.take() }?.resume(returning: joined)
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
    case stopped(String)

    public var description: String {
        switch self {
        case .unreachable(let name): return "\(name) is unreachable"
        case .stopped(let name): return "the \(name) pool has stopped"
        }
    }
}
