import Foundation

/// A named thread whose end another thread can wait for.
///
/// `@unchecked Sendable`: `Thread` is not marked Sendable; this one is started once by
/// its owner and otherwise only waited for, through the semaphore.
final class JoinableThread: @unchecked Sendable {
    private let thread: Thread
    private let finished = DispatchSemaphore(value: 0)

    init(name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        let finished = finished
        thread = Thread {
            body()
            finished.signal()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
    }

    func start() { thread.start() }
    func join() { finished.wait() }
}
