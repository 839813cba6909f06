import BlockingPool
import Foundation
import Logging
import Metrics
import Synchronization

/// Wakes the changes feed's long polls when events may have been appended: at once for
/// this process's own appends, and through `LISTEN roboscope_events` for every other
/// process's. A wake-up only says "read again": a waiter that misses one still times
/// out and answers, so nothing depends on it.
public final class ChangeSignal: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// The count of wake-ups so far: read it before reading the log, then wait past it.
    public var current: UInt64 {
        state.withLock { $0.generation }
    }

    /// How many tasks wait for a bump now.
    public var waiting: Int {
        state.withLock { $0.waiters.count }
    }

    public func bump() {
        let woken = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for continuation in woken { continuation.resume() }
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
        let id = state.withLock { state in
            state.nextWaiter &+= 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.generation != seen || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { $0.waiters.removeValue(forKey: id) }
            continuation?.resume()
        }
    }
}

/// Listens for `roboscope_events` on its own connection and thread, bumping a
/// `ChangeSignal` for each batch of notifications; reconnects with backoff.
public final class ChangeListener: Sendable {
    private let thread: ReconnectingThread<PGConnection>

    public init(url: String, signal: ChangeSignal, logger: Logger) {
        thread = ReconnectingThread(name: "change-listener", logger: logger) {
            let connection = try PGConnection(url)
            try AppendNotifier.listen(on: connection)
            return connection
        } body: { connection, stop in
            // Anything appended while we were away: let the waiters look.
            signal.bump()
            while !stop.isStopped {
                if try connection.waitReadable(timeoutMilliseconds: 500), try !connection.drainNotifications().isEmpty {
                    signal.bump()
                }
            }
        }
    }

    public func start() { thread.start() }

    public func shutdown() { thread.shutdown() }

    /// Stops the thread and waits for its end (at once if it never started); within
    /// half a second, the longest it waits for a notification.
    public func stop() async { await thread.stop() }
}
