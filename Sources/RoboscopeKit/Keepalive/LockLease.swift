import Foundation

/// How a lease stands.
public enum LeaseState: Hashable, Sendable {
    /// Held: `fencingToken` to stamp writes with, valid until `expiresAt` unless extended.
    case held(fencingToken: Int64, expiresAt: Date)
    /// Lost: another client holds the lock, or it expired before an extension got through.
    case lost(reason: String)
    /// Released by `release()`.
    case released
}

/// A work session's edit lock, kept: acquired once, extended before its TTL runs out
/// (at two thirds of it, retried sooner when an extension fails), reported lost when an
/// extension is refused or the TTL passes without one. `token` goes in `X-Lock-Token` on
/// writes to an enforced lock; `fencingToken` grows with every acquisition.
public actor LockLease {
    public nonisolated let workSessionID: UUID
    let client: RoboscopeClient
    let ttlSeconds: Int
    let enforce: Bool
    public private(set) var token: String?
    public private(set) var fencingToken: Int64?
    public private(set) var state: LeaseState = .lost(reason: "not acquired")
    public nonisolated let states: AsyncStream<LeaseState>
    private let continuation: AsyncStream<LeaseState>.Continuation
    private var task: Task<Void, Never>?

    /// A lease of `workSessionID`'s lock, taken by `acquire()`; `enforce` makes the service
    /// refuse other clients' writes to the session while it is held.
    public init(client: RoboscopeClient, workSessionID: UUID, ttlSeconds: Int = 30, enforce: Bool = false) {
        self.client = client
        self.workSessionID = workSessionID
        self.ttlSeconds = ttlSeconds
        self.enforce = enforce
        (states, continuation) = AsyncStream<LeaseState>.makeStream(bufferingPolicy: .bufferingNewest(8))
    }

    /// Takes the lock; false when someone else holds it (`state` says who, if known).
    public func acquire() async throws -> Bool {
        let grant = try await client.acquireLock(workSessionID: workSessionID, ttlSeconds: ttlSeconds, enforce: enforce)
        guard grant.acquired, let token = grant.token, let fencing = grant.fencingToken else {
            set(.lost(reason: "held by \(grant.holder ?? "someone else")"))
            return false
        }
        self.token = token
        fencingToken = fencing
        let expiresAt = await client.configuration.clock.now().addingTimeInterval(Double(ttlSeconds))
        set(.held(fencingToken: fencing, expiresAt: expiresAt))
        task = Task { await self.keep(token: token, fencing: fencing, expiresAt: expiresAt) }
        return true
    }

    /// Stops extending and releases the lock.
    public func release() async {
        task?.cancel()
        task = nil
        if let token { _ = try? await client.retrying(.never).releaseLock(workSessionID: workSessionID, token: token) }
        token = nil
        set(.released)
        continuation.finish()
    }

    private func keep(token: String, fencing: Int64, expiresAt start: Date) async {
        let clock = client.configuration.clock
        var expiresAt = start
        var random = SystemRandomNumberGenerator()
        var failures = 0
        let once = client.retrying(.never)
        while !Task.isCancelled {
            let now = await clock.now()
            let left = expiresAt.timeIntervalSince(now)
            // Under a millisecond left, no extension can arrive in time. (Waiting out such a
            // remainder in `Date`'s resolution could also never reach zero: a test clock
            // adding a nanosecond to a Date leaves it where it was.)
            guard left > 0.001 else { return lose("expired before it could be extended") }
            // Two thirds into the TTL; after a failure, again soon, but never past the
            // expiry (where the lease is then lost).
            let wait =
                failures == 0
                ? Duration.seconds(max(0, left - Double(ttlSeconds) / 3))
                : min(.seconds(left), client.configuration.reconnect.delay(forRetry: failures, using: &random))
            do { try await clock.sleep(for: wait) } catch { return }
            do {
                guard try await once.extendLock(workSessionID: workSessionID, token: token, ttlSeconds: ttlSeconds)
                else {
                    return lose("taken over: the lock is no longer this lease's")
                }
                expiresAt = await clock.now().addingTimeInterval(Double(ttlSeconds))
                failures = 0
                set(.held(fencingToken: fencing, expiresAt: expiresAt))
            } catch {
                failures += 1
            }
        }
    }

    private func lose(_ reason: String) {
        token = nil
        set(.lost(reason: reason))
    }

    private func set(_ newState: LeaseState) {
        state = newState
        continuation.yield(newState)
    }
}
