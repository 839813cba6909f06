import BlockingPool
import Foundation
import Logging
import Metrics

/// Wakes the changes feed's long polls when events may have been appended: at once for
/// this process's own appends, and through `LISTEN roboscope_events` for every other
/// process's. A wake-up only says "read again": a waiter that misses one still times
/// out and answers, so nothing depends on it.
///
/// `@unchecked Sendable`: every stored property is guarded by `lock`.
public final class ChangeSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var generation: UInt64 = 0
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter: UInt64 = 0

    /// Long polls of the changes feed waiting now.
    private let waitingGauge = Gauge(label: "roboscope_changes_waiting")

    public init() {
        waitingGauge.record(0)
    }

    /// The count of wake-ups so far: read it before reading the log, then wait past it.
    public var current: UInt64 {
        lock.withLock { generation }
    }

    /// How many long polls are waiting now (a gauge, and what tests watch).
    public var waiting: Int {
        lock.withLock { waiters.count }
    }

    public func bump() {
        let woken = lock.withLock {
            generation &+= 1
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        for continuation in woken { continuation.resume() }
        if !woken.isEmpty { waitingGauge.record(waiting) }
    }

    /// Returns once the count passes `seen`, after `timeout`, or when the task is cancelled.
    public func wait(past seen: UInt64, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForBump(past: seen) }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForBump(past seen: UInt64) async {
        let id = lock.withLock { () -> UInt64 in nextWaiter &+= 1; return nextWaiter }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = lock.withLock { () -> Bool in
                    if generation != seen || Task.isCancelled { return true }
                    waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() } else { waitingGauge.record(waiting) }
            }
        } onCancel: {
            let continuation = lock.withLock { waiters.removeValue(forKey: id) }
            continuation?.resume()
            if continuation != nil { waitingGauge.record(waiting) }
        }
    }
}

/// Listens for `roboscope_events` on its own connection and thread, bumping a
/// `ChangeSignal` for each batch of notifications; reconnects with backoff.
///
/// `@unchecked Sendable`: `stopped` is guarded by `lock`, `thread` is set by `start`
/// before the thread runs; the connection lives on the listener's own thread.
public final class ChangeListener: @unchecked Sendable {
    private let url: String
    private let signal: ChangeSignal
    private let logger: Logger
    // Written before the thread starts and by `shutdown`, read by the thread under `lock`.
    private let lock = NSLock()
    private var stopped = false
    private var thread: Thread?
    private let completion = ThreadCompletion()

    public init(url: String, signal: ChangeSignal, logger: Logger) {
        self.url = url
        self.signal = signal
        self.logger = logger
    }

    public func start() {
        let thread = Thread { [self] in
            run()
            completion.finish()
        }
        thread.name = "change-listener"
        self.thread = thread
        thread.start()
    }

    public func shutdown() {
        lock.withLock { stopped = true }
    }

    /// Stops the thread and waits for its end (at once if it never started); within
    /// half a second, the longest it waits for a notification.
    public func stop() async {
        shutdown()
        guard thread != nil else { return }
        await completion.wait()
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func run() {
        var backoff = Backoff()
        while !isStopped {
            do {
                let connection = try PGConnection(url)
                try AppendNotifier.listen(on: connection)
                backoff.succeeded()
                // Anything appended while we were away: let the waiters look.
                signal.bump()
                while !isStopped {
                    if try connection.waitReadable(timeoutMilliseconds: 500), try !connection.drainNotifications().isEmpty {
                        signal.bump()
                    }
                }
            } catch {
                logger.debug("change listener lost Postgres; reconnecting", metadata: ["error": "\(error)"])
                let wait = backoff.failed()
                // Checked every 100 ms so that `stop` is not held up by a long wait.
                let until = ContinuousClock.now + wait
                while !isStopped, ContinuousClock.now < until { Thread.sleep(forTimeInterval: 0.1) }
            }
        }
    }
}
