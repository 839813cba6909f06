import Metrics
import RoboscopeDomain
import RoboscopePostgres
import Synchronization

/// The changes feed's long polls, woken per topic. An append anywhere bumps the
/// `ChangeSignal`; instead of every waiting poll reading its topic again (one database
/// transaction each: 50 idle polls made 5 writes elsewhere cost 921 transactions), one
/// loop reads the heads of every topic with waiters in one statement, at most once per
/// `interval`, and wakes only the polls whose topic moved past their `since`.
///
/// Waiting polls are bounded: `maxWaiting` in the process (past it 503, the process is
/// full), `maxPerTenant` per tenant (past it 429: that tenant holds its share, and the
/// others keep theirs) and `maxPerSubject` per subject (past it 429, that client holds
/// enough). A poll takes its place (`admit`) before it waits and gives it back (`leave`)
/// when it ends, in one step each under the lock: a burst of polls sent at once cannot
/// overshoot.
final class ChangeWatch: Sendable {
    typealias Heads = @Sendable ([Topic]) async throws -> [Topic: Int64]

    private struct Waiter {
        var topic: Topic
        var since: Int64
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        /// Places taken by admitted polls, per subject, per tenant and in all.
        var admitted: [String: Int] = [:]
        var admittedByTenant: [String: Int] = [:]
        var admittedCount = 0
        var nextID: UInt64 = 0
        var looping = false
    }

    private let state = Mutex(State())
    let signal: ChangeSignal
    let heads: Heads
    let maxWaiting: Int
    let maxPerSubject: Int
    let maxPerTenant: Int
    /// A tenant whose plan names `max_long_polls` has that many instead of `maxPerTenant`.
    let plans: TenantPlans?
    let interval: Duration
    /// Long polls of the changes feed waiting now.
    private let waitingGauge = Gauge(label: "roboscope_changes_waiting")
    /// Of those, the ones registered for a wake-up now (an admitted poll reads its topic
    /// first, and between two waits reads again): a test that writes elsewhere waits for
    /// this, since a poll that registers after a bump is woken at once by design.
    private let watchingGauge = Gauge(label: "roboscope_changes_watching")
    /// Statements reading the heads of the waited-on topics (one per round of bumps).
    private let headChecks = Counter(label: "roboscope_changes_head_checks_total")
    /// Polls woken to read their topic again.
    private let wakeups = Counter(label: "roboscope_changes_wakeups_total")

    init(
        signal: ChangeSignal, maxWaiting: Int = 10_000, maxPerSubject: Int = 100, maxPerTenant: Int,
        plans: TenantPlans? = nil, interval: Duration = .milliseconds(100), heads: @escaping Heads
    ) {
        self.plans = plans
        self.signal = signal
        self.maxWaiting = maxWaiting
        self.maxPerSubject = maxPerSubject
        self.maxPerTenant = maxPerTenant
        self.interval = interval
        self.heads = heads
        waitingGauge.record(0)
        watchingGauge.record(0)
        headChecks.increment(by: 0)
        wakeups.increment(by: 0)
    }

    /// Polls admitted to wait now.
    var waiting: Int { state.withLock { $0.admittedCount } }

    /// Takes a place for one more poll of `subject` of `tenant`: nil if it may wait (it
    /// calls `leave` when it ends), else the refusal.
    func admit(_ subject: String, tenant: String) -> DomainError? {
        let maxPerTenant = plans?.plan(for: tenant).maxLongPolls ?? self.maxPerTenant
        return state.withLock { state in
            if state.admittedCount >= maxWaiting {
                return DomainError(
                    .unavailable, "\(maxWaiting) long polls are waiting on this server already; retry shortly")
            }
            if state.admitted[subject, default: 0] >= maxPerSubject {
                return DomainError(
                    .rateLimited, "\(maxPerSubject) long polls of yours are waiting already; retry when one answers",
                    field: "wait", details: ["retry_after": .integer(1)])
            }
            if state.admittedByTenant[tenant, default: 0] >= maxPerTenant {
                return DomainError(
                    .rateLimited,
                    "\(maxPerTenant) long polls of your tenant are waiting already (its share of this "
                        + "server); retry when one answers",
                    field: "wait", details: ["retry_after": .integer(1), "limit": .string("tenant")])
            }
            state.admitted[subject, default: 0] += 1
            state.admittedByTenant[tenant, default: 0] += 1
            state.admittedCount += 1
            waitingGauge.record(state.admittedCount)
            return nil
        }
    }

    /// An admitted poll of `subject` of `tenant` ended: its place is free.
    func leave(_ subject: String, tenant: String) {
        state.withLock { state in
            state.admitted[subject, default: 1] -= 1
            if state.admitted[subject] == 0 { state.admitted[subject] = nil }
            state.admittedByTenant[tenant, default: 1] -= 1
            if state.admittedByTenant[tenant] == 0 { state.admittedByTenant[tenant] = nil }
            state.admittedCount -= 1
            waitingGauge.record(state.admittedCount)
        }
    }

    /// Waits until `topic` has an event after `since` (true), `timeout` passes or the
    /// task is cancelled (false). `seen`: the signal's count read before the caller read
    /// the topic; a bump since then answers at once (the read may have missed it).
    func wait(topic: Topic, since: Int64, seen: UInt64, timeout: Duration) async -> Bool {
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            return state.nextID
        }
        let timer = Task { [self] in
            try? await Task.sleep(for: timeout)
            resume(id, with: false)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let (startLoop, now): (Bool, Bool) = state.withLock { state in
                    if Task.isCancelled { return (false, true) }
                    state.waiters[id] = Waiter(topic: topic, since: since, continuation: continuation)
                    watchingGauge.record(state.waiters.count)
                    let start = !state.looping
                    state.looping = true
                    return (start, false)
                }
                if now { return continuation.resume(returning: false) }
                if signal.current != seen { resume(id, with: true) }
                if startLoop { Task { await loop() } }
            }
        } onCancel: {
            resume(id, with: false)
        }
    }

    private func resume(_ id: UInt64, with moved: Bool) {
        let waiter = state.withLock { state -> Waiter? in
            defer { watchingGauge.record(state.waiters.count) }
            return state.waiters.removeValue(forKey: id)
        }
        guard let waiter else { return }
        if moved { wakeups.increment() }
        waiter.continuation.resume(returning: moved)
    }

    /// While anyone waits: after each bump (and at most once per `interval`), reads the
    /// heads of the waited-on topics in one statement and wakes the polls they passed.
    private func loop() async {
        var seen = signal.current
        while true {
            let topics = state.withLock { state -> [Topic] in
                if state.waiters.isEmpty { state.looping = false }
                return Array(Set(state.waiters.values.map(\.topic)))
            }
            if topics.isEmpty { return }
            await signal.wait(past: seen, timeout: .seconds(1))
            guard signal.current != seen else { continue }
            // Bumps coming in a burst (a busy log) are read once.
            try? await Task.sleep(for: interval)
            seen = signal.current
            let waited = state.withLock { Array(Set($0.waiters.values.map(\.topic))) }
            guard !waited.isEmpty else { continue }
            let moved: [Topic: Int64]
            do {
                headChecks.increment()
                moved = try await heads(waited)
            } catch {
                // The log cannot be read: every poll reads again and answers what it finds
                // (or 503), rather than waiting out its time.
                wakeAll()
                continue
            }
            let due = state.withLock { state in
                state.waiters.filter { _, waiter in (moved[waiter.topic] ?? 0) > waiter.since }.map(\.key)
            }
            for id in due { resume(id, with: true) }
        }
    }

    private func wakeAll() {
        let ids = state.withLock { Array($0.waiters.keys) }
        for id in ids { resume(id, with: true) }
    }
}
