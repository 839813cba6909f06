import Metrics
import RoboscopeDomain
import RoboscopeProofs
import Synchronization

/// Group commit for the appends of separate requests: at most `appendsAtOnce` appends
/// run at a time, and the requests that arrive meanwhile are committed together, in one
/// call of `eventlog.append` and one transaction.
///
/// Why: a marker create's append costs most of its time in what every call pays once
/// (the executor start-up of each statement, the commit, two thread hand-offs), and the
/// append is set-based, so eight creates in one call cost about half as much each
/// (benchmarks/analysis.md). An idle server runs each request at once, alone: only
/// requests that would otherwise wait for a core are combined.
///
/// Each request keeps its own outcome. A refusal (a version conflict, a deleted parent,
/// an enforced lock, a key answered before) rolls the whole group back, and then each
/// request is appended again on its own, so only the refused one fails. Its events stay
/// contiguous and in order, its key's answer is stored with them, and the locks of the
/// whole group are taken in the one global order (docs/ordering.md): combining changes
/// which transaction a request's events share, nothing a client can observe.
final class AppendCombiner: Sendable {
    struct Limits: Sendable, Hashable {
        /// Appends running at once (each on a connection of its own).
        var appendsAtOnce: Int
        /// A group is closed before it would exceed this many events (a request larger
        /// than this, a bulk create, runs alone).
        var eventsPerAppend: Int

        static let `default` = Limits(appendsAtOnce: EventStore.defaultAppendsAtOnce, eventsPerAppend: 64)
    }

    private struct Waiting {
        let request: BatchDocument.Request
        let continuation: CheckedContinuation<[EventStore.Appended], any Error>
    }

    private struct State {
        var queue: [Waiting] = []
        var running = 0
    }

    private let pool: PostgresPool
    let limits: Limits
    private let signer: HistorySigner?
    private let state = Mutex(State())

    /// Calls of `eventlog.append` (transactions), and the requests they carried: their
    /// ratio is the mean group size. A group refused and appended again request by
    /// request counts once more for each request, and in `fallbacks`.
    static let transactions = Counter(label: "roboscope_append_transactions_total")
    static let requests = Counter(label: "roboscope_append_requests_total")
    static let fallbacks = Counter(label: "roboscope_append_groups_split_total")
    static let waiting = Gauge(label: "roboscope_appends_queued")

    init(pool: PostgresPool, limits: Limits, signer: HistorySigner? = nil) {
        precondition(limits.appendsAtOnce >= 1 && limits.eventsPerAppend >= 1)
        self.pool = pool
        self.signer = signer
        self.limits = limits
        // At zero from the start, as every series of this process.
        for counter in [Self.transactions, Self.requests, Self.fallbacks] { counter.increment(by: 0) }
        Self.waiting.record(0)
    }

    func append(_ request: BatchDocument.Request) async throws -> [EventStore.Appended] {
        let leads = state.withLock { Self.takeRunner(&$0, limits: limits) }
        guard leads else {
            return try await withCheckedThrowingContinuation { continuation in
                let (starts, queued) = state.withLock { state in
                    state.queue.append(Waiting(request: request, continuation: continuation))
                    return (Self.takeRunner(&state, limits: limits), state.queue.count)
                }
                Self.waiting.record(queued)
                if starts { Task { await self.drain() } }
            }
        }
        // A free runner appends in the request's own task: on a quiet server, the request
        // alone with no extra hop, as without a combiner.
        defer { releaseRunner() }
        let (others, queued) = state.withLock { state in
            (Self.group(from: &state.queue, joining: request, limits: limits), state.queue.count)
        }
        if !others.isEmpty { Self.waiting.record(queued) }
        let outcomes = await commit([request] + others.map(\.request))
        for (waiting, outcome) in zip(others, outcomes.dropFirst()) { waiting.continuation.resume(with: outcome) }
        return try outcomes[0].get()
    }

    /// Runs `alone` holding a runner if one is free, and nil without running it if none
    /// is: for a write that reads, decides and appends in one pool job. On a quiet
    /// server it runs as it would without a combiner; under load the caller decides in a
    /// job of its own and appends with the queue (`append(_:)`).
    func ifRunnerFree<T>(_ alone: () async throws -> T) async rethrows -> T? {
        guard state.withLock({ Self.takeRunner(&$0, limits: limits) }) else { return nil }
        defer { releaseRunner() }
        return try await alone()
    }

    /// Requests waiting for an append to take them.
    var queued: Int { state.withLock { $0.queue.count } }

    private static func takeRunner(_ state: inout State, limits: Limits) -> Bool {
        guard state.running < limits.appendsAtOnce else { return false }
        state.running += 1
        return true
    }

    /// Gives the runner up, or hands it to a task that appends what queued meanwhile.
    private func releaseRunner() {
        let goesOn = state.withLock { state in
            if state.queue.isEmpty { state.running -= 1 }
            return !state.queue.isEmpty
        }
        if goesOn { Task { await self.drain() } }
    }

    /// Appends groups from the queue until it is empty, then gives up its runner.
    private func drain() async {
        while let (group, queued) = state.withLock({ state -> ([Waiting], Int)? in
            if state.queue.isEmpty {
                state.running -= 1
                return nil
            }
            return (Self.group(from: &state.queue, joining: nil, limits: limits), state.queue.count)
        }) {
            Self.waiting.record(queued)
            let outcomes = await commit(group.map(\.request))
            for (waiting, outcome) in zip(group, outcomes) { waiting.continuation.resume(with: outcome) }
        }
    }

    private func commit(_ requests: [BatchDocument.Request]) async -> [Result<[EventStore.Appended], any Error>] {
        do {
            let signer = signer
            return try await pool.translatingErrors { try Self.append(requests, signer: signer, on: $0) }
        } catch {
            return Array(repeating: .failure(error), count: requests.count)
        }
    }

    /// The requests of `queue` that join a group led by `first` (or by the queue's head),
    /// in order, up to the limit of events, leaving behind any that could not run at the
    /// same time as the group's in transactions of their own:
    /// - one whose locks conflict with the group's (an exclusive lock another member
    ///   takes at all, a shared lock another takes exclusively). In one transaction the
    ///   locks no longer order them, and each request's checks run before any member's
    ///   events are written: a lock's acquisition and a create it should refuse must not
    ///   pass their checks together;
    /// - one that writes a stream another member writes: its expected versions are checked
    ///   against the log alone, not against another request's events in the same batch
    ///   (two creates of one id must not become versions 1 and 2);
    /// - one whose idempotency key another member has: the second use of a key must see
    ///   the first one's answer.
    /// So a group commits what its members could have committed side by side.
    private static func group(
        from queue: inout [Waiting], joining first: BatchDocument.Request?, limits: Limits
    ) -> [Waiting] {
        // The usual case on a quiet server: a request that leads alone.
        guard !queue.isEmpty else { return [] }
        var group: [Waiting] = []
        var left: [Waiting] = []
        var events = 0
        var keys: Set<IdempotencyClaim.Key> = []
        var streams: Set<StreamRef> = []
        var shared: Set<String> = []
        var exclusive: Set<String> = []
        func admit(_ request: BatchDocument.Request) -> Bool {
            let own = Set(request.batch.events.map(\.stream))
            let locks = request.batch.locks
            guard streams.isDisjoint(with: own), request.claim.map({ keys.contains($0.identity) }) != true,
                locks.allSatisfy({ !exclusive.contains($0.name) && !($0.exclusive && shared.contains($0.name)) })
            else { return false }
            events += request.batch.events.count
            streams.formUnion(own)
            for lock in locks {
                if lock.exclusive { exclusive.insert(lock.name) } else { shared.insert(lock.name) }
            }
            if let claim = request.claim { keys.insert(claim.identity) }
            return true
        }
        if let first { _ = admit(first) }
        var index = queue.startIndex
        while index < queue.endIndex {
            let waiting = queue[index]
            let hasMembers = first != nil || !group.isEmpty
            if hasMembers && events + waiting.request.batch.events.count > limits.eventsPerAppend { break }
            if admit(waiting.request) { group.append(waiting) } else { left.append(waiting) }
            index += 1
        }
        queue = left + queue[index...]
        return group
    }

    /// Appends `requests` in one transaction; after a refusal, each in its own. Without
    /// the database, every request fails alike.
    static func append(
        _ requests: [BatchDocument.Request], signer: HistorySigner?, on connection: PGConnection
    ) throws -> [Result<[EventStore.Appended], any Error>] {
        Self.transactions.increment()
        Self.requests.increment(by: requests.count)
        guard requests.count > 1 else {
            return [
                Result {
                    try EventStore.append(
                        StorageJSON.encodeString(BatchDocument(combining: requests)), signer: signer, on: connection)
                }
            ]
        }
        let appended: [EventStore.Appended]
        do {
            appended = try EventStore.append(
                StorageJSON.encodeString(BatchDocument(combining: requests)), signer: signer, on: connection)
        } catch let error as DomainError where error.code == .unavailable || error.code == .commitUnknown {
            // Not a refusal: with a commit that may have happened, appending the members
            // one by one could store them twice.
            throw error
        } catch {
            Self.fallbacks.increment()
            Self.transactions.increment(by: requests.count)
            Self.requests.increment(by: requests.count)
            return requests.map { request in
                Result {
                    try EventStore.append(
                        StorageJSON.encodeString(BatchDocument(combining: [request])), signer: signer, on: connection)
                }
            }
        }
        var outcomes: [Result<[EventStore.Appended], any Error>] = []
        var start = appended.startIndex
        for request in requests {
            let end = start + request.batch.events.count
            guard end <= appended.endIndex else { throw ShortAnswer(returned: appended.count) }
            outcomes.append(.success(Array(appended[start..<end])))
            start = end
        }
        return outcomes
    }
}

/// `eventlog.append` returned fewer rows than the group had events (a bug: it returns
/// one per event).
struct ShortAnswer: Error {
    let returned: Int
}

extension IdempotencyClaim {
    /// Who sent the key, and the key: what makes two claims one.
    struct Key: Hashable {
        let actor: String
        let key: String
    }

    var identity: Key { Key(actor: actor, key: key) }
}
