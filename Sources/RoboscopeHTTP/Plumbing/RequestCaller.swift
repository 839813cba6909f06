import RoboscopeDomain
import Synchronization

/// Who a request turned out to be, for the access-log line and the tenant's series that
/// `ErrorMiddleware` writes once it is answered. The principal is found further in
/// (`PrincipalMiddleware`), on a copy of the context; this one object is shared by every
/// copy, so what is learnt there is read here.
public final class RequestCaller: Sendable {
    private struct State {
        var reachedAPI = false
        var principal: Principal?
    }

    private let state = Mutex(State())

    public init() {}

    /// The request came under `/api/v1`: it counts in its tenant's requests (`_unknown`
    /// while no token verified).
    func enteredAPI() {
        state.withLock { $0.reachedAPI = true }
    }

    func identified(as principal: Principal) {
        state.withLock { $0.principal = principal }
    }

    var reachedAPI: Bool { state.withLock { $0.reachedAPI } }
    var principal: Principal? { state.withLock { $0.principal } }
}
