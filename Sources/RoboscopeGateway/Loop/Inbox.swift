import Synchronization

/// Work handed to a background thread (the log tailer, the presence thread): other
/// threads `post`, the owner `take`s everything queued when its `waker` fires.
final class Inbox<Job: Sendable>: Sendable {
    let waker: Waker
    private let queue = Mutex<(jobs: [Job], closed: Bool)>(([], false))

    init() throws {
        waker = try Waker()
    }

    func post(_ job: Job) {
        queue.withLock { $0.jobs.append(job) }
        waker.wake()
    }

    /// Asks the owner to stop; `take` reports it.
    func close() {
        queue.withLock { $0.closed = true }
        waker.wake()
    }

    func take() -> (jobs: [Job], closed: Bool) {
        queue.withLock { queue in
            defer { queue.jobs.removeAll() }
            return queue
        }
    }
}
