import BlockingPool
import Foundation
import Synchronization

/// A named thread, started at once, whose end async code can wait for without holding
/// a thread of the cooperative pool. Only the completion is kept: `Thread` is not
/// Sendable, and nothing needs it after the start.
final class JoinableThread: Sendable {
    private let completion = ThreadCompletion()

    init(name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        let completion = completion
        let thread = Thread {
            body()
            completion.finish()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }

    func join() async { await completion.wait() }
}

/// The thread of an owner made before it starts (the log tailer, the catch-up reader and
/// the presence thread start with the gateway): started once, joined after its stop.
final class ThreadSlot: Sendable {
    private let thread = Mutex<JoinableThread?>(nil)

    func start(name: String, _ body: @escaping @Sendable () -> Void) {
        let started = JoinableThread(name: name, body)
        thread.withLock { $0 = started }
    }

    /// Waits for the thread's end (at once if it never started).
    func join() async {
        let running = thread.withLock { $0 }
        await running?.join()
    }
}
