import RoboscopeDomain
import Synchronization

/// The revocations in force in this process: replaced whole by the process's listener
/// (`RevocationListener`) whenever Postgres says they changed, consulted by the verifier
/// on every request and by the gateway for its open sockets.
public final class RevocationList: Sendable {
    private struct State {
        var revocations: [Revocation] = []
        var observers: [@Sendable ([Revocation]) -> Void] = []
    }

    private let state = Mutex(State())

    public init() {}

    public var current: [Revocation] { state.withLock { $0.revocations } }

    /// The first revocation `principal` matches, if any.
    public func revocation(of principal: Principal) -> Revocation? {
        state.withLock { state in state.revocations.first { $0.matches(principal) } }
    }

    /// Puts `revocations` in force; observers hear of it when it differs from before.
    public func replace(with revocations: [Revocation]) {
        let observers: [@Sendable ([Revocation]) -> Void]? = state.withLock { state in
            guard state.revocations != revocations else { return nil }
            state.revocations = revocations
            return state.observers
        }
        for observer in observers ?? [] { observer(revocations) }
    }

    /// `observer` hears every new list (the gateway closes the sockets it ends).
    public func observe(_ observer: @escaping @Sendable ([Revocation]) -> Void) {
        state.withLock { $0.observers.append(observer) }
    }
}
