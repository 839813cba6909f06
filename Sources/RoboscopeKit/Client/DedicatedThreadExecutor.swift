import Foundation

/// A serial executor with a thread of its own, for an actor whose work blocks: the
/// outbox's SQLite commits (each an fsync) and the writes to standard output.
///
/// Swift's cooperative pool has one thread per core, two on a small machine: a blocking
/// call there holds a thread every other task of the process needs, timers included, for
/// as long as the disk takes (this project's CI machine stalled fsync for up to 30 s).
/// Jobs run in the order they came, one at a time; the thread lives as long as the
/// process, which is as long as a command needs it.
package final class DedicatedThreadExecutor: SerialExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    package init(name: String) {
        let thread = Thread { [self] in runJobs() }
        thread.name = name
        thread.start()
    }

    // `UnownedJob` rather than `ExecutorJob`: the latter needs macOS 14, the package's floor is 13.
    package func enqueue(_ job: UnownedJob) {
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    private func runJobs() {
        while true {
            let batch = condition.withLock {
                while jobs.isEmpty { condition.wait() }
                defer { jobs.removeAll(keepingCapacity: true) }
                return jobs
            }
            for job in batch { job.runSynchronously(on: asUnownedSerialExecutor()) }
        }
    }
}
