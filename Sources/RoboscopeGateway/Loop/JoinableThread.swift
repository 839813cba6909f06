import BlockingPool
import Foundation

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
