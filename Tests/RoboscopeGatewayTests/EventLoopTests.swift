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

    /// The tailer hands a busy loop several batches: the loop takes them all in its next
    /// turn and only then writes (`afterMessages`), so each subscriber gets them in one write.
    @Test func messagesQueuedWhileTheLoopIsBusyRunInOneTurnBeforeOneWrite() async throws {
        let parts = try EventLoop<String>.Parts()
        let record = Record()
        let gate = DispatchSemaphore(value: 0)
        let thread = JoinableThread(name: "test-loop") {
            EventLoop(name: "test-loop", parts: parts).run(
                receive: { message in
                    if message == "busy" {
                        record.add("entered")
                        gate.wait()
                    }
                    record.add(message)
                },
                afterMessages: { record.add("write") }, onTick: { _ in })
        }
        parts.inbox.post("busy")
        _ = await record.entries(once: 1)
        for batch in 1...3 { parts.inbox.post("batch \(batch)") }
        gate.signal()

        let entries = await record.entries(once: 7)
        #expect(entries == ["entered", "busy", "write", "batch 1", "batch 2", "batch 3", "write"])
        parts.inbox.close()
        await thread.join()
    }
}
