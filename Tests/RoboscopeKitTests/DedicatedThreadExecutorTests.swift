import Foundation
import Testing
@testable import RoboscopeKit

/// The executor that keeps an actor's blocking work off Swift's cooperative pool.
@Suite struct DedicatedThreadExecutorTests {
    actor Blocker {
        private let executor = DedicatedThreadExecutor(name: "test-blocker")
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        private(set) var seen: [Int] = []

        /// Blocks its thread, as an fsync on a stalled disk does, once it says so.
        func block(until gate: DispatchSemaphore, _ blocking: Countdown) {
            blocking.arrive()
            gate.wait()
        }

        private(set) var threads: Set<String> = []

        func record(_ value: Int) {
            seen.append(value)
            threads.insert("\(pthread_self())")
        }
    }

    /// Ends `reached` once `count` blockers have arrived (from their own threads).
    final class Countdown: @unchecked Sendable {
        private let lock = NSLock()
        private var left: Int
        private let continuation: AsyncStream<Void>.Continuation
        let reached: AsyncStream<Void>

        init(_ count: Int) {
            left = count
            (reached, continuation) = AsyncStream<Void>.makeStream()
        }

        func arrive() {
            if lock.withLock({
                left -= 1; return left == 0
            }) {
                continuation.finish()
            }
        }
    }

    /// While the actor's thread is blocked, timers on the cooperative pool still fire:
    /// even with more blocked actors than the pool has threads (this machine has two).
    /// Actors on the default executor would hold the pool here and nothing would fire: a
    /// plain thread then releases them after 10 s, and the test fails instead of hanging.
    @Test func blockedActorsLeaveThePoolFree() async throws {
        let gate = DispatchSemaphore(value: 0)
        let blockers = (0..<(ProcessInfo.processInfo.activeProcessorCount + 2)).map { _ in Blocker() }
        let blocking = Countdown(blockers.count)
        let blocked = blockers.map { blocker in Task { await blocker.block(until: gate, blocking) } }
        let done = DispatchSemaphore(value: 0)
        let released = NSLock()
        nonisolated(unsafe) var byWatchdog = false
        Thread.detachNewThread {
            guard done.wait(timeout: .now() + 10) == .timedOut else { return }
            released.withLock { byWatchdog = true }
            for _ in blockers { gate.signal() }
        }
        for await _ in blocking.reached {}
        // The timer under test, and a hop between tasks, with every blocker's thread held.
        try await Task.sleep(for: .milliseconds(20))
        let answered = await Task { 42 }.value
        #expect(answered == 42)
        #expect(!released.withLock { byWatchdog }, "the pool ran nothing until the blockers were released")
        done.signal()
        for _ in blockers { gate.signal() }
        for task in blocked { await task.value }
        // And the actors run again once released.
        await blockers[0].record(1)
        #expect(await blockers[0].seen == [1])
    }

    /// One actor's calls run in the order they came, all on its one thread, whichever
    /// threads the callers ran on.
    @Test func jobsRunInOrderOnTheActorsThread() async {
        let blocker = Blocker()
        for value in 0..<1_000 {
            if value.isMultiple(of: 100) { await Task.yield() }
            await blocker.record(value)
        }
        #expect(await blocker.seen == Array(0..<1_000))
        #expect(await blocker.threads.count == 1)
    }

    actor Worker {
        private let executor: DedicatedThreadExecutor
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        init(_ executor: DedicatedThreadExecutor) { self.executor = executor }
        func work() -> Int { 1 }
    }

    /// The thread ends with the actor that used it: an app that opens and closes many
    /// offline sessions does not collect threads.
    @Test func theThreadEndsOnceItsActorIsReleased() async throws {
        let ended = Countdown(50)
        for _ in 0..<50 {
            let worker = Worker(DedicatedThreadExecutor(name: "test-worker", ended: { ended.arrive() }))
            #expect(await worker.work() == 1)
        }
        // Every thread ended (a guard: a thread that never ends would hold the test here,
        // and the suite's own time limit would name it).
        try await FirstOutcome<Void>.bounded(
            by: .seconds(10), on: SystemClock(),
            timeout: { RoboscopeError.transport("not every thread ended within 10 s") },
            cancelled: { CancellationError() }
        ) { for await _ in ended.reached {} }
    }
}
