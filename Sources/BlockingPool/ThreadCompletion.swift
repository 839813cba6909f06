import Synchronization

/// The end of a thread, as something async code can wait for without blocking a thread
/// of Swift's cooperative pool.
public final class ThreadCompletion: Sendable {
    private let state = Mutex<(finished: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    public init() {}

    /// Called by the thread as its last act.
    public func finish() {
        let waiters = state.withLock { state in
            state.finished = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    public func wait() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let finished = state.withLock { state in
                if !state.finished { state.waiters.append(waiter) }
                return state.finished
            }
            if finished { waiter.resume() }
        }
    }
}
