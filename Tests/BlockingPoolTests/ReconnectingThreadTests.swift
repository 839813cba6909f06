import BlockingPool
import Dispatch
import Logging
import Synchronization
import Testing

/// The one way a listener's thread connects, retries, stops and joins.
@Suite struct ReconnectingThreadTests {
    final class Counts: Sendable {
        let connects = Atomic(0)
        let bodies = Atomic(0)
    }

    @Test func aFailedConnectIsRetriedAndAFailedBodyGetsANewResource() async throws {
        let counts = Counts()
        // The body that serves says so, and holds its resource until the test lets it go.
        let (serving, servingContinuation) = AsyncStream<Int>.makeStream()
        let released = DispatchSemaphore(value: 0)
        let thread = ReconnectingThread<Int>(name: "test-listener", logger: Logger(label: "test")) {
            let attempt = counts.connects.add(1, ordering: .sequentiallyConsistent).newValue
            if attempt <= 2 { throw Failure() }
            return attempt
        } body: { resource, stop in
            let run = counts.bodies.add(1, ordering: .sequentiallyConsistent).newValue
            // The first resource that connects fails in use; the next one serves until stopped.
            if run == 1 { throw Failure() }
            servingContinuation.yield(resource)
            released.wait()
            #expect(stop.isStopped, "let go only once stopped")
        }
        thread.start()
        var iterator = serving.makeAsyncIterator()
        let resource = await iterator.next()
        #expect(resource == 4, "two failed connects, a resource whose body failed, then a new one")
        thread.shutdown()
        released.signal()
        await thread.stop()
        #expect(counts.bodies.load(ordering: .sequentiallyConsistent) == 2, "stopped, it connects no more")
        #expect(counts.connects.load(ordering: .sequentiallyConsistent) == 4)
    }

    @Test func stoppingAThreadThatNeverStartedReturnsAtOnce() async {
        let thread = ReconnectingThread<Int>(name: "idle", logger: Logger(label: "test")) {
            1
        } body: { _, _ in
        }
        await thread.stop()
    }

    struct Failure: Error {}
}
