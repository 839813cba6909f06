import Foundation

/// State that several threads share, reachable only under its lock: the kit's one
/// unchecked `Sendable`, so that the types built on it (`ChangeSignal`, `FirstOutcome`,
/// the transports' calls) are checked by the compiler.
///
/// `NSCondition` rather than `Mutex`: the kit runs on iOS 16 and macOS 13, `Mutex`
/// needs iOS 18 and macOS 15. A condition, so that a thread can also wait under it for
/// the state to change (`DedicatedThreadExecutor`).
package final class Locked<State> {
    private let condition = NSCondition()
    private var state: State

    package init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the state, under the lock.
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        condition.lock()
        defer { condition.unlock() }
        return try body(&state)
    }

    /// Changes the state under the lock and wakes one thread waiting in `wait(until:_:)`.
    package func withLockSignalling<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        condition.lock()
        defer {
            condition.signal()
            condition.unlock()
        }
        return try body(&state)
    }

    /// Waits until `ready` holds of the state, then runs `body` with it, under the lock.
    package func wait<Result>(until ready: (State) -> Bool, _ body: (inout State) throws -> Result) rethrows -> Result {
        condition.lock()
        defer { condition.unlock() }
        while !ready(state) { condition.wait() }
        return try body(&state)
    }
}

extension Locked: @unchecked Sendable where State: Sendable {}
