import Foundation
@testable import RoboscopeGateway
import Synchronization
import Testing

@Suite struct EventLoopTests {
    /// What a loop did, in order, and a wait for the moment it has done `count` things.
    final class Record: Sendable {
        private let state = Mutex<
            (entries: [String], waiter: (count: Int, continuation: CheckedContinuation<Void, Never>)?)
        >(([], nil))

        func add(_ entry: String) {
            let ready = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.entries.append(entry)
                guard let waiter = state.waiter, state.entries.count >= waiter.count else { return nil }
                state.waiter = nil
                return waiter.continuation
            }
            ready?.resume()
        }

        func entries(once count: Int) async -> [String] {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if state.entries.count >= count { return true }
                    state.waiter = (count, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
            return state.withLock { $0.entries }
        }
    }

    /// The tailer hands a busy loop several batches: the loop runs them all in its next
    /// turn and only then writes (`afterTasks`), so each subscriber gets them in one write.
    @Test func tasksQueuedWhileTheLoopIsBusyRunInOneTurnBeforeOneWrite() async throws {
        let loop = try EventLoop(name: "test-loop")
        let record = Record()
        loop.afterTasks = { record.add("write") }
        loop.start()
        let gate = DispatchSemaphore(value: 0)
        await withCheckedContinuation { (entered: CheckedContinuation<Void, Never>) in
            loop.execute {
                entered.resume()
                gate.wait()
                record.add("busy")
            }
        }
        for batch in 1...3 { loop.execute { record.add("batch \(batch)") } }
        gate.signal()

        let entries = await record.entries(once: 6)
        #expect(entries == ["busy", "write", "batch 1", "batch 2", "batch 3", "write"])
        loop.stop()
        await loop.join()
    }
}
