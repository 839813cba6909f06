import Foundation

/// A count of changes that tasks wait on without missing one: the one primitive every
/// wait in the kit is built on (`OfflineWorkSession.synchronized()`, the outbox's send
/// loop, `roboscope-client apply`).
///
/// A waiter reads `generation` *before* it looks at the state it waits for, and then
/// waits for a generation after that one: a change signalled between the look and the
/// wait has already moved the count, so the wait returns at once (no lost wake-up,
/// whatever the interleaving). Cancelling the waiting task ends the wait at once with
/// `CancellationError`.
package final class ChangeSignal: Sendable {
    private struct State {
        var current: UInt64 = 0
        var waiters: [UInt64: (after: UInt64, continuation: CheckedContinuation<Void, any Error>)] = [:]
        var nextWaiter: UInt64 = 0
        var finished = false
    }

    private let state = Locked(State())

    package init() {}

    /// The number of changes signalled so far.
    package var generation: UInt64 { state.withLock { $0.current } }

    /// How many tasks wait now (tests wait on it rather than on a guessed time).
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// Records a change and wakes every wait it ends.
    package func signal() {
        let ready: [CheckedContinuation<Void, any Error>] = state.withLock { state in
            state.current += 1
            let current = state.current
            let due = state.waiters.filter { $0.value.after < current }
            for id in due.keys { state.waiters[id] = nil }
            return due.map(\.value.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Ends every wait, now and later, as if changed: for owners that stop.
    package func finish() {
        let all: [CheckedContinuation<Void, any Error>] = state.withLock { state in
            state.finished = true
            state.current += 1
            defer { state.waiters = [:] }
            return state.waiters.values.map(\.continuation)
        }
        for continuation in all { continuation.resume() }
    }

    /// Returns once `generation` is past `seen`; throws `CancellationError` as soon as
    /// the calling task is cancelled.
    package func wait(after seen: UInt64) async throws {
        let id: UInt64 = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.current > seen || state.finished { return .success(()) }
                    state.waiters[id] = (seen, continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let continuation = state.withLock { $0.waiters.removeValue(forKey: id)?.continuation }
            continuation?.resume(throwing: CancellationError())
        }
    }
}
