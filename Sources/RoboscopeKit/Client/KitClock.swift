import Foundation

/// What the kit schedules with: the waits of retries, reconnects, heartbeats and lease
/// renewals. `SystemClock` waits for real; tests pass a `ManualClock` and move time
/// themselves, so nothing in them sleeps.
public protocol KitClock: Sendable {
    /// Returns after `duration` (at once for zero), throws `CancellationError` when the
    /// calling task is cancelled.
    func sleep(for duration: Duration) async throws
    /// Now, for expiries.
    func now() async -> Date
}

/// The real clock.
public struct SystemClock: KitClock {
    /// The system's clock.
    public init() {}

    public func sleep(for duration: Duration) async throws {
        guard duration > .zero else { return try Task.checkCancellation() }
        try await Task.sleep(for: duration)
    }

    public func now() async -> Date { Date() }
}
