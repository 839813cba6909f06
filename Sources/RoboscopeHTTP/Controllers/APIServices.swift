import RoboscopeAuth
import RoboscopeDomain
import RoboscopePostgres
import RoboscopeRedis

/// What the controllers share: the event store, the read models, the Redis-backed
/// presence and locks, and the limits.
public struct APIServices: Sendable {
    public var store: EventStore
    public var reads: ReadModels
    public var audit: AuditReader
    public var timeTravel: TimeTravel
    public var presence: PresenceStore
    public var locks: LockStore
    /// Stored answers of writes with an `Idempotency-Key`.
    public var idempotency: IdempotencyKeys
    /// Token revocations (`/admin/revocations`).
    public var revocations: RevocationStore
    /// Checkpoints, proofs and the log's entries (verifiable history): on the reports'
    /// pool, as every read of the audit trail.
    var history: HistoryStore { HistoryStore(pool: audit.pool) }
    /// Names each tenant's log (`roboscope/<deployment>/<tenant>`; `--deployment-name`)
    /// and the deployment's gateways' connection directory in Redis.
    public var deploymentName = "local"
    var connectionKeys: ConnectionDirectoryKeys { ConnectionDirectoryKeys(deployment: deploymentName) }
    let sessionLocks: SessionLocks
    /// The work sessions' places that marker creates need, read once each.
    let sessionPlaces: WorkSessionPlaces
    /// Wakes long polls of the changes feed when events are appended.
    public var changes: ChangeSignal? {
        didSet { changeWatch = changes.map(makeWatch) }
    }
    /// The long polls waiting, woken per topic; bounded per process and per subject.
    private(set) var changeWatch: ChangeWatch?
    /// Long polls waiting at once: in the process, per tenant (nil: a quarter of the
    /// process's) and per subject (`--changes-max-waiting`).
    public var maxWaitingPolls: (process: Int, perTenant: Int?, perSubject: Int) = (10_000, nil, 100) {
        didSet { changeWatch = changes.map(makeWatch) }
    }

    private func makeWatch(_ signal: ChangeSignal) -> ChangeWatch {
        let feed = ChangesFeed(pool: store.pool)
        // Without authentication there is one tenant: its share is the whole process.
        let perTenant =
            authentication == nil
            ? maxWaitingPolls.process : maxWaitingPolls.perTenant ?? max(1, maxWaitingPolls.process / 4)
        return ChangeWatch(
            signal: signal, maxWaiting: maxWaitingPolls.process, maxPerSubject: maxWaitingPolls.perSubject,
            maxPerTenant: perTenant, plans: plans
        ) { topics in
            try await feed.heads(of: topics)
        }
    }
    /// A standby the changes feed reads pages on once it has caught up with their topic
    /// (`--read-database-url`; `StandbyReads`); nil reads everything on the primary.
    public var standby: PostgresPool?
    /// The changes feed over the primary and, when there is one, the standby.
    var changesFeed: ChangesFeed { ChangesFeed(pool: store.pool, standby: standby) }
    /// The changes feed's pages read ahead for clients catching up (none by default).
    public var changesReadAhead = ChangesReadAhead(capacity: 0)
    /// Heavy requests one tenant may run at once (`--tenant-heavy-requests`); nil: no
    /// bound (authentication off: one tenant).
    public var heavyRequests: HeavyRequestShare?
    /// What `GET /realtime` answers.
    public var realtime = RealtimeSettings()
    /// The investigations console's files (`GET /console`); nil serves none.
    public var console: ConsoleAssets?
    /// Body and header sizes, idle and request timeouts.
    public var limits: HTTPLimits
    var bodyLimit: Int { limits.body }
    /// Bearer-token checks; nil: no authentication (the local default), one tenant.
    public var authentication: TokenVerifier? {
        didSet {
            budgets = RequestBudgets(rateLimits, bySubject: authentication != nil, plans: plans)
            changeWatch = changes.map(makeWatch)
        }
    }
    /// Each tenant's plan (`--tenant-plans-file`): its rate, long polls and database share.
    public var plans: TenantPlans? {
        didSet {
            budgets = RequestBudgets(rateLimits, bySubject: authentication != nil, plans: plans)
            changeWatch = changes.map(makeWatch)
        }
    }
    /// The one tenant without authentication (`--default-tenant`).
    public var defaultTenant = "default"
    /// The authorization check of every route, over the places of entities.
    let gate: Gate
    /// Requests per second (and burst) per subject (per address without authentication)
    /// and per tenant on `/api/v1`.
    public var rateLimits = RateLimits() {
        didSet { budgets = RequestBudgets(rateLimits, bySubject: authentication != nil, plans: plans) }
    }
    /// The buckets of `rateLimits`: the middleware takes a token of each request, the
    /// routes charge what a request cost beyond it.
    private(set) var budgets = RequestBudgets(RateLimits(), bySubject: false)
    /// Pages of other sites that may write (`--allowed-origins`; none by default).
    public var allowedOrigins = OriginPolicy()
    /// Peers whose `X-Forwarded-For` names the client (`--trusted-proxies`; none by default).
    public var trustedProxies = TrustedProxies()

    public init(
        store: EventStore, reads: ReadModels, audit: AuditReader, timeTravel: TimeTravel, presence: PresenceStore,
        locks: LockStore, limits: HTTPLimits = HTTPLimits()
    ) {
        self.store = store
        self.reads = reads
        self.audit = audit
        self.timeTravel = timeTravel
        self.presence = presence
        self.locks = locks
        self.limits = limits
        idempotency = IdempotencyKeys(pool: store.pool)
        revocations = RevocationStore(pool: store.pool, signer: store.signer)
        sessionLocks = SessionLocks(
            store: store, locks: locks, claims: RequestClaims(redis: locks.redis), idempotency: idempotency)
        gate = Gate(places: Places(pool: store.pool))
        sessionPlaces = WorkSessionPlaces { [reads] id in try await reads.workSession(id)?.place }
    }
}
