import Synchronization

/// The value a tenant's series carry in their `tenant` label: its own name for the first
/// `limit` tenants this process meets, `_other` for every one after (`--metrics-max-tenants`).
/// A deployment with thousands of customers, or an identity provider minting tenant names,
/// cannot grow `/metrics` without bound; a tenant keeps its label for the life of the process.
public final class TenantLabels: Sendable {
    /// The label of every tenant past the limit.
    public static let other = "_other"
    /// The label of a request no verified principal made (a refused or missing token).
    public static let unknown = "_unknown"

    private struct State {
        var limit: Int
        var named: Set<String> = []
    }

    private let state: Mutex<State>

    public init(limit: Int) {
        state = Mutex(State(limit: max(0, limit)))
    }

    /// `tenant`'s label: its name while there is room (or once it has one), else `_other`.
    public func label(for tenant: String) -> String {
        if tenant.isEmpty { return Self.unknown }
        return state.withLock { state in
            if state.named.contains(tenant) { return tenant }
            guard state.named.count < state.limit else { return Self.other }
            state.named.insert(tenant)
            return tenant
        }
    }

    /// Changes the limit for tenants not yet named (those named keep their label).
    public func setLimit(_ limit: Int) {
        state.withLock { $0.limit = max(0, limit) }
    }

    /// How many tenants have a label of their own.
    public var namedCount: Int { state.withLock { $0.named.count } }
}
