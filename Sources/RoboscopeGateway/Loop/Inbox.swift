import Synchronization

/// Work handed to a thread (a shard's loop, the log tailer, the catch-up reader, the
/// presence thread): a typed mailbox. Other threads `post`, the owner `take`s everything
/// queued when its `waker` fires.
final class Inbox<Job: Sendable>: Sendable {
    let waker: Waker
    private let queue = Mutex<(jobs: [Job], closed: Bool)>(([], false))

    init() throws {
        waker = try Waker()
    }

    func post(_ job: Job) {
        let wasEmpty = queue.withLock { queue in
            defer { queue.jobs.append(job) }
            return queue.jobs.isEmpty
        }
        // A queue that held jobs has a wake-up pending already: its owner takes them all.
        if wasEmpty { waker.wake() }
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
