import Synchronization

/// An `Atomic` that closures can share: `Atomic` cannot be copied into one, a reference
/// to it can (the closures a `ReconnectingThread` runs, and the type that signals them).
public final class SharedAtomic<Value: AtomicRepresentable & Sendable>: Sendable {
    public let value: Atomic<Value>

    public init(_ initial: Value) {
        value = Atomic(initial)
    }
}
