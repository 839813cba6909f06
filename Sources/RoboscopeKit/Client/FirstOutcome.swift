import Foundation

/// The first of several outcomes, kept once: later ones are dropped. A waiter installs
/// its continuation before or after the outcome lands, and is resumed exactly once.
///
/// What makes it different from a task group: nothing waits for the losers to end. A
/// task group returns only once every child has finished, so a child that ignores
/// cancellation holds the caller; here the losers are cancelled and left to end on
/// their own.
package final class FirstOutcome<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var outcome: Result<Value, any Error>?
        /// The tasks racing for the outcome: cancelled once it lands.
        var racers: [Task<Void, Never>] = []
    }

    private let state = Locked(State())

    package init() {}

    /// Resumes `continuation` with the outcome, now if it has landed, else when it does.
    package func await(_ continuation: CheckedContinuation<Value, any Error>) {
        let ready: Result<Value, any Error>? = state.withLock { state in
            if let outcome = state.outcome { return outcome }
            state.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }

    /// Offers an outcome; only the first counts (answers whether this one did).
    @discardableResult
    package func settle(_ result: Result<Value, any Error>) -> Bool {
        let (won, waiting, losers): (Bool, CheckedContinuation<Value, any Error>?, [Task<Void, Never>]) =
            state.withLock { state in
                guard state.outcome == nil else { return (false, nil, []) }
                state.outcome = result
                defer {
                    state.continuation = nil
                    state.racers = []
                }
                return (true, state.continuation, state.racers)
            }
        // The waiter first: a loser's cancellation handler runs on this thread and might
        // block (a transport's own cancel), which must not hold the outcome back.
        waiting?.resume(with: result)
        for racer in losers { racer.cancel() }
        return won
    }

    /// Runs `body` in a task of its own, cancelled when the outcome lands (at once if
    /// it already has).
    package func race(_ body: @escaping @Sendable () async -> Void) {
        let task = Task { await body() }
        let late = state.withLock { state in
            guard state.outcome == nil else { return true }
            state.racers.append(task)
            return false
        }
        if late { task.cancel() }
    }
}

extension FirstOutcome {
    /// `operation`'s result, or `timeout()` thrown once `limit` has passed on `clock`, or
    /// `cancelled()` thrown as soon as the calling task is cancelled: whichever comes
    /// first, without waiting for `operation` to notice that it lost. A transport that
    /// loses a cancel (swift-corelibs-foundation's URLSession did: an attempt stayed
    /// open for good after its cancel) cannot hold the call.
    package static func bounded(
        by limit: Duration?, on clock: any KitClock, timeout: @escaping @Sendable () -> any Error,
        cancelled: @escaping @Sendable () -> any Error, _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let first = FirstOutcome<Value>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                first.await(continuation)
                first.race {
                    do { first.settle(.success(try await operation())) } catch { first.settle(.failure(error)) }
                }
                if let limit {
                    first.race {
                        guard (try? await clock.sleep(for: limit)) != nil else { return }
                        first.settle(.failure(timeout()))
                    }
                }
            }
        } onCancel: {
            first.settle(.failure(cancelled()))
        }
    }
}
