import Foundation
import RoboscopeKit

/// A clock that moves only when told (`advance`): tests of retries, reconnects,
/// heartbeats and leases run without sleeping, and see every wait the kit asks for.
public actor ManualClock: KitClock {
    private var current: Date
    private var elapsed: Duration = .zero
    private var sleepers: [UInt64: (deadline: Duration, continuation: CheckedContinuation<Void, any Error>)] = [:]
    private var nextSleeper: UInt64 = 0
    private var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    /// Every duration a sleep asked for, in order.
    public private(set) var requestedSleeps: [Duration] = []

    /// A clock at `now` that moves only with `advance`.
    public init(now: Date = Date(timeIntervalSince1970: 1_795_000_000)) {
        current = now
    }

    public func now() -> Date { current }

    public func sleep(for duration: Duration) async throws {
        requestedSleeps.append(duration)
        guard duration > .zero else { return try Task.checkCancellation() }
        nextSleeper += 1
        let id = nextSleeper
        let deadline = elapsed + duration
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled { return continuation.resume(throwing: CancellationError()) }
                sleepers[id] = (deadline, continuation)
                notifyWatchers()
            }
        } onCancel: {
            Task { await self.cancel(id) }
        }
    }

    private func cancel(_ id: UInt64) {
        sleepers.removeValue(forKey: id)?.continuation.resume(throwing: CancellationError())
    }

    /// Moves time on, waking every sleep that is due.
    public func advance(by duration: Duration) {
        elapsed += duration
        current = current.addingTimeInterval(duration.seconds)
        for (id, sleeper) in sleepers where sleeper.deadline <= elapsed {
            sleepers[id] = nil
            sleeper.continuation.resume()
        }
    }

    /// Moves time to the earliest pending sleep's deadline (waking it).
    public func advanceToNextSleep() {
        guard let next = sleepers.values.map(\.deadline).min() else { return }
        advance(by: next - elapsed)
    }

    /// How many tasks are sleeping now.
    public var sleeping: Int { sleepers.count }

    /// Returns once at least `count` tasks are sleeping.
    public func waitForSleepers(_ count: Int = 1) async {
        if sleepers.count >= count { return }
        await withCheckedContinuation { watchers.append((count, $0)) }
    }

    private func notifyWatchers() {
        let ready = watchers.filter { $0.count <= sleepers.count }
        watchers.removeAll { $0.count <= sleepers.count }
        for watcher in ready { watcher.continuation.resume() }
    }
}
