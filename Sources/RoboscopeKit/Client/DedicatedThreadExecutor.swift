import Foundation

/// A serial executor with a thread of its own, for an actor whose work blocks: the
/// outbox's SQLite commits (each an fsync) and the writes to standard output.
///
/// Swift's cooperative pool has one thread per core, two on a small machine: a blocking
/// call there holds a thread every other task of the process needs, timers included, for
/// as long as the disk takes (this project's CI machine stalled fsync for up to 30 s).
/// Jobs run in the order they came, one at a time. The thread ends once the executor is
/// released (with the actor that uses it) and its last job has run, so an app that opens
/// and closes many offline sessions does not collect threads.
package final class DedicatedThreadExecutor: SerialExecutor, Sendable {
    private struct Jobs {
        var waiting: [UnownedJob] = []
        var closed = false
    }

    /// What the thread and the executor share; the thread holds this, not the executor,
    /// so that releasing the executor is what ends the thread.
    private let jobs = Locked(Jobs())

    /// `ended` runs on the thread as it ends (tests wait for it).
    package init(name: String, ended: (@Sendable () -> Void)? = nil) {
        let jobs = jobs
        // The job's executor as the thread passes it on: unowned, since a job for the
        // actor keeps the actor, and so this executor, alive while it waits or runs.
        let executor = UnownedSerialExecutor(ordinary: self)
        let thread = Thread {
            Self.run(jobs, on: executor)
            ended?()
        }
        thread.name = name
        thread.start()
    }

    deinit {
        jobs.withLockSignalling { $0.closed = true }
    }

    // `UnownedJob` rather than `ExecutorJob`: the latter needs macOS 14, the package's floor is 13.
    package func enqueue(_ job: UnownedJob) {
        jobs.withLockSignalling { $0.waiting.append(job) }
    }

    package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    private static func run(_ jobs: Locked<Jobs>, on executor: UnownedSerialExecutor) {
        while true {
            let batch: [UnownedJob]? = jobs.wait(until: { !$0.waiting.isEmpty || $0.closed }) { jobs in
                if jobs.waiting.isEmpty { return nil }
                defer { jobs.waiting.removeAll(keepingCapacity: true) }
                return jobs.waiting
            }
            guard let batch else { return }
            for job in batch { job.runSynchronously(on: executor) }
        }
    }
}
