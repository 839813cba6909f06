import Foundation

/// Work handed to a background thread (the log tailer, the presence thread): other
/// threads `post`, the owner `take`s everything queued when its `waker` fires.
final class Inbox<Job>: @unchecked Sendable {
    let waker: Waker
    private let lock = NSLock()
    private var jobs: [Job] = []
    private var closed = false

    init() throws {
        waker = try Waker()
    }

    func post(_ job: Job) {
        lock.lock(); jobs.append(job); lock.unlock()
        waker.wake()
    }

    /// Asks the owner to stop; `take` reports it.
    func close() {
        lock.lock(); closed = true; lock.unlock()
        waker.wake()
    }

    func take() -> (jobs: [Job], closed: Bool) {
        lock.lock(); defer { lock.unlock() }
        let taken = jobs
        jobs.removeAll()
        return (taken, closed)
    }
}
