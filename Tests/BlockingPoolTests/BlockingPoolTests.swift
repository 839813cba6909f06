@testable import BlockingPool
import Dispatch
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// The pool's life: work queued before a shutdown still runs, nothing is taken after
/// it, and as a member of a service group it outlives the services listed after it.
@Suite struct BlockingPoolTests {
    final class Connection: BlockingConnection {
        var isBroken: Bool { false }
        func check() -> Bool { true }
    }

    /// A gate a job waits at, opened from the test.
    final class Gate: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)
        func wait() { semaphore.wait() }
        func open() { semaphore.signal() }
    }

    static func pool(size: Int = 1) -> BlockingPool<Connection> {
        BlockingPool(name: "test", size: size, logger: Logger(label: "test")) { Connection() }
    }

    /// A job that holds one of `pool`'s threads until `gate` opens, once it has started.
    static func blockedJob(on pool: BlockingPool<Connection>, until gate: Gate) async -> Task<Int, any Error> {
        let (started, startedSignal) = AsyncStream<Void>.makeStream()
        let job = Task {
            try await pool.withConnection { _ in
                startedSignal.yield(); gate.wait(); return 1
            }
        }
        var iterator = started.makeAsyncIterator()
        await iterator.next()
        return job
    }

    @Test func workQueuedBeforeShutdownRunsAndLaterWorkIsRefused() async throws {
        let pool = Self.pool()
        let gate = Gate()
        let first = await Self.blockedJob(on: pool, until: gate)
        let second = Task { try await pool.withConnection { _ in 2 } }
        while pool.state.withLock({ $0.waiting }) < 1 { await Task.yield() }

        let stopping = Task { await pool.shutdown() }
        while pool.state.withLock({ $0.running }) { await Task.yield() }
        gate.open()
        await stopping.value

        #expect(try await first.value == 1)
        #expect(try await second.value == 2, "queued before the shutdown, so it ran")
        await #expect(throws: BlockingPoolError.self) { try await pool.withConnection { _ in 3 } }
    }

    @Test func threadsStartWithTheFirstJobOrRunAndAnUnusedPoolStopsAtOnce() async throws {
        let unused = Self.pool(size: 3)
        #expect(!unused.state.withLock { $0.started })
        await unused.shutdown(timeout: .seconds(30))
        await #expect(throws: BlockingPoolError.self) { try await unused.withConnection { _ in 0 } }
        #expect(!unused.state.withLock { $0.started }, "a stopped pool starts no thread")

        let used = Self.pool(size: 2)
        #expect(try await used.withConnection { _ in 7 } == 7)
        #expect(used.state.withLock { $0.started })
        await used.shutdown()
    }

    @Test func aStuckThreadDoesNotHoldUpTheShutdownPastItsTimeout() async throws {
        let pool = Self.pool()
        let gate = Gate()
        let stuck = await Self.blockedJob(on: pool, until: gate)
        await pool.shutdown(timeout: .milliseconds(50))
        #expect(pool.usage.busy == 1, "returned while the job still ran")
        gate.open()
        _ = try await stuck.value
    }

    /// A connection made by the test's pool, numbered in the order they were made.
    final class Numbered: BlockingConnection, Sendable {
        let number: Int
        init(_ number: Int) { self.number = number }
        var isBroken: Bool { false }
        func check() -> Bool { true }
    }

    /// Work one request after another reuses the connection that just finished, so that
    /// a quiet service keeps its prepared statements and caches warm on one connection
    /// and never pays for a connect or an idle check it need not make.
    @Test func workOneAfterAnotherStaysOnTheConnectionThatJustFinished() async throws {
        let made = Mutex(0)
        let pool = BlockingPool<Numbered>(name: "test", size: 8, logger: Logger(label: "test")) {
            Numbered(
                made.withLock { made in
                    made += 1; return made
                })
        }
        // Threads start with the first job; wait until every one of them waits for work.
        _ = try await pool.withConnection { $0.number }
        while pool.state.withLock({ $0.idle.count }) < pool.size { await Task.yield() }

        let first = try await pool.withConnection { $0.number }
        let madeBefore = made.withLock { $0 }
        var used: Set<Int> = [first]
        for _ in 0..<50 { used.insert(try await pool.withConnection { $0.number }) }
        #expect(used == [first])
        #expect(made.withLock { $0 } == madeBefore, "no connection made for work that never overlapped")
        await pool.shutdown()
    }

    /// Overlapping work still spreads over the threads: a job blocked in one thread does
    /// not hold up the next.
    @Test func overlappingWorkRunsOnAnotherConnection() async throws {
        let pool = Self.pool(size: 2)
        let gate = Gate()
        let blocked = await Self.blockedJob(on: pool, until: gate)
        #expect(try await pool.withConnection { _ in 2 } == 2)
        gate.open()
        #expect(try await blocked.value == 1)
        await pool.shutdown()
    }

    /// A service that needs the pool while it shuts down, as the API server's last requests do.
    struct LastWords: Service {
        let pool: BlockingPool<Connection>
        let answered: AsyncStream<Int>.Continuation

        func run() async throws {
            try? await gracefulShutdown()
            answered.yield(try await pool.withConnection { _ in 42 })
            answered.finish()
        }
    }

    @Test func inAServiceGroupThePoolListedFirstStopsLast() async throws {
        let pool = Self.pool(size: 2)
        let (answers, answered) = AsyncStream<Int>.makeStream()
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: pool), .init(service: LastWords(pool: pool, answered: answered))],
                logger: Logger(label: "test")
            ))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // Wait until the pool serves, then ask the group to stop.
            _ = try await pool.withConnection { _ in 0 }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        var received: [Int] = []
        for await answer in answers { received.append(answer) }
        #expect(received == [42])
        #expect(!pool.state.withLock { $0.running }, "the group stopped the pool")
        await #expect(throws: BlockingPoolError.self) { try await pool.withConnection { _ in 0 } }
    }
}
