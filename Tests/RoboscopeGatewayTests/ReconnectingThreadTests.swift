import BlockingPool
import Foundation
import Logging
import Synchronization
import Testing

/// The one way a listener's thread connects, retries, stops and joins.
@Suite struct ReconnectingThreadTests {
    final class Counts: Sendable {
        let connects = Atomic(0)
        let bodies = Atomic(0)
    }

    /// Waits for `condition`, at most `seconds` (a guard against a hang, not a timing).
    func eventually(_ seconds: Double, _ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    @Test func aFailedConnectIsRetriedAndAFailedBodyGetsANewResource() async throws {
        let counts = Counts()
        let thread = ReconnectingThread<Int>(name: "test-listener", logger: Logger(label: "test")) {
            let attempt = counts.connects.add(1, ordering: .sequentiallyConsistent).newValue
            if attempt <= 2 { throw Failure() }
            return attempt
        } body: { resource, stop in
            let run = counts.bodies.add(1, ordering: .sequentiallyConsistent).newValue
            // The first resource that connects fails in use; the next one serves until stopped.
            if run == 1 { throw Failure() }
            while !stop.isStopped { Thread.sleep(forTimeInterval: 0.01) }
            #expect(resource >= 4, "a new resource after the body failed")
        }
        thread.start()
        #expect(try await eventually(10) { counts.bodies.load(ordering: .sequentiallyConsistent) == 2 })
        #expect(counts.connects.load(ordering: .sequentiallyConsistent) == 4)
        await thread.stop()
        #expect(counts.bodies.load(ordering: .sequentiallyConsistent) == 2, "stopped, it connects no more")
    }

    @Test func stoppingAThreadThatNeverStartedReturnsAtOnce() async {
        let thread = ReconnectingThread<Int>(name: "idle", logger: Logger(label: "test")) { 1 } body: { _, _ in }
        await thread.stop()
    }

    struct Failure: Error {}
}
