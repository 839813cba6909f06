import Foundation
import BlockingPool
import Metrics
import RoboscopeMetrics
import RoboscopeDomain
import RoboscopeProofs
import RoboscopeWire
import Tracing

/// Appends batches of events to the log, in one transaction each, through
/// `eventlog.append`, which checks versions, numbers the events on their topics and
/// updates the projections.
public struct EventStore: Sendable {
    public let pool: PostgresPool
    /// Told after each commit, so gateways and long polls learn of new events without
    /// a NOTIFY inside the append's transaction.
    public let notifier: AppendNotifier?
    /// Commits concurrent requests' appends together (`append(_:claim:answer:)`).
    let combiner: AppendCombiner
    /// Signs each append's events in its transaction (verifiable history); nil appends
    /// unsigned events, which verifiers report (`--signing-key-file`).
    public let signer: HistorySigner?

    /// How many appends run at a time unless told otherwise (`--appends-at-once`).
    public static let defaultAppendsAtOnce = 2

    /// `appendsAtOnce`: how many appends run at a time; requests arriving meanwhile are
    /// committed together (`AppendCombiner`).
    public init(
        pool: PostgresPool, notifier: AppendNotifier? = nil, appendsAtOnce: Int = defaultAppendsAtOnce,
        signer: HistorySigner? = nil
    ) {
        self.pool = pool
        self.notifier = notifier
        self.signer = signer
        var limits = AppendCombiner.Limits.default
        limits.appendsAtOnce = appendsAtOnce
        combiner = AppendCombiner(pool: pool, limits: limits, signer: signer)
        // Registered at zero from the start: a fresh deployment's dashboards show 0, not "no data".
        Self.appendedEvents.increment(by: 0)
    }

    /// Events appended through the API (a Prometheus counter once metrics are bootstrapped).
    static let appendedEvents = Counter(label: "roboscope_events_appended_total")

    /// Positions and versions of the appended events, in batch order.
    public struct Appended: Sendable, Hashable {
        public var position: Int64
        public var version: Int64
    }

    /// Appends `batch`; with a `claim`, stores `answer` under its key in the same
    /// transaction (a batch without events changes nothing, so nothing is stored, but a
    /// key answered before is refused as the append would refuse it). Under load, the
    /// transaction may hold other requests' appends too (`AppendCombiner`).
    @discardableResult
    public func append(
        _ batch: AppendBatch, claim: IdempotencyClaim? = nil, answer: StoredAnswer? = nil
    ) async throws -> [Appended] {
        guard !batch.events.isEmpty else {
            if let claim { try await IdempotencyKeys(pool: pool).refuseAnswered(claim) }
            return []
        }
        return try await Self.traced(batch) { batch, span in
            let appended = try await combiner.append(BatchDocument.Request(batch: batch, claim: claim, answer: answer))
            committed(appended, in: span)
            return appended
        }
    }

    /// Runs an append of `batch` in a span of its own (`roboscope.append`), with the
    /// span's context stored in the events' metadata instead of the request's: the
    /// delivery to subscribers then continues the trace from the append (without a
    /// tracer there is no span, and the request's `traceparent` stays).
    static func traced<T>(
        _ batch: AppendBatch, _ body: (AppendBatch, any Span) async throws -> T
    ) async throws -> T {
        try await appendSpan { span in
            span.attributes["roboscope.events"] = batch.events.count
            return try await body(stamped(batch, with: TraceContext.current()), span)
        }
    }

    /// The span of one append (`roboscope.append`), named by the tenant whose request
    /// made it (the pools' owner of the work, in the request's task).
    static func appendSpan<T>(_ body: (any Span) async throws -> T) async throws -> T {
        try await SpanRecording.withSpan("roboscope.append") { span in
            if let tenant = PoolShare.owner { span.attributes["roboscope.tenant"] = tenant }
            return try await body(span)
        }
    }

    /// `batch` with `traceParent` (when there is one) as its events' trace context.
    static func stamped(_ batch: AppendBatch, with traceParent: TraceParent?) -> AppendBatch {
        guard let traceParent else { return batch }
        var batch = batch
        for index in batch.events.indices { batch.events[index].metadata.traceParent = traceParent }
        return batch
    }

    /// Appends `batch` and stores the answer `answer` makes of what the append returned,
    /// in one transaction (an answer that names a version the log assigns).
    public func append(
        _ batch: AppendBatch, claim: IdempotencyClaim, answer: @escaping @Sendable ([Appended]) -> StoredAnswer
    ) async throws -> (appended: [Appended], answer: StoredAnswer) {
        try await Self.traced(batch) { batch, span in
            let document = StorageJSON.encodeString(BatchDocument(batch: batch, claim: claim, answer: nil))
            let signer = signer
            let (appended, stored) = try await pool.translatingErrors { connection in
                try connection.transaction {
                    let appended = try Self.append(document, signer: signer, on: connection)
                    let stored = answer(appended)
                    try IdempotencyKeys.store(claim, stored, on: connection)
                    return (appended, stored)
                }
            }
            committed(appended, in: span)
            return (appended, stored)
        }
    }

    /// Reads what a write decides on, decides, and appends the decision. The append
    /// checks the versions the decision was made on, as it would after a separate read.
    /// With a `claim`, the answer is stored with the events; a decision to change
    /// nothing is checked against the key here, as the append would check it.
    ///
    /// When one of the combiner's runners is free, all three run in one pool job on one
    /// connection: one hand-off to the pool instead of one for the read and one for the
    /// append. When every runner is busy, the write reads and decides in a job of its
    /// own, and its append joins the queue, to be committed with others
    /// (`AppendCombiner`).
    public func append<State: Sendable>(
        after read: @escaping @Sendable (PGConnection) throws -> State,
        _ decide: @escaping @Sendable (State) throws -> (StoredAnswer, AppendBatch),
        claim: IdempotencyClaim?
    ) async throws -> StoredAnswer {
        try await Self.appendSpan { span in
            let signer = signer
            // Read here, in the request's task: the decision is made on a pool thread.
            let trace = TraceContext.current()
            let alone = try await combiner.ifRunnerFree {
                try await pool.translatingErrors { connection -> (StoredAnswer, [Appended]) in
                    let (answer, decided) = try Self.decide(after: read, decide, claim: claim, on: connection)
                    guard !decided.events.isEmpty else { return (answer, []) }
                    let batch = Self.stamped(decided, with: trace)
                    return (
                        answer, try Self.append(batch, claim: claim, answer: answer, signer: signer, on: connection)
                    )
                }
            }
            if let (answer, appended) = alone {
                span.attributes["roboscope.events"] = appended.count
                if !appended.isEmpty { committed(appended, in: span) }
                return answer
            }
            let (answer, decided) = try await pool.translatingErrors {
                try Self.decide(after: read, decide, claim: claim, on: $0)
            }
            span.attributes["roboscope.events"] = decided.events.count
            guard !decided.events.isEmpty else { return answer }
            let batch = Self.stamped(decided, with: trace)
            committed(
                try await combiner.append(BatchDocument.Request(batch: batch, claim: claim, answer: answer)), in: span)
            return answer
        }
    }

    private static func decide<State>(
        after read: (PGConnection) throws -> State, _ decide: (State) throws -> (StoredAnswer, AppendBatch),
        claim: IdempotencyClaim?, on connection: PGConnection
    ) throws -> (StoredAnswer, AppendBatch) {
        let (answer, batch) = try decide(try read(connection))
        if batch.events.isEmpty, let claim { try IdempotencyKeys.refuseAnswered(claim, on: connection) }
        return (answer, batch)
    }

    /// `span`: the append's, which names the position of its last event.
    private func committed(_ appended: [Appended], in span: any Span) {
        if let last = appended.last { span.attributes["roboscope.position"] = last.position }
        notifier?.signal()
        Self.appendedEvents.increment(by: appended.count)
        // Called in the request's task: its tenant is the pools' owner of the work.
        if let tenant = PoolShare.owner { TenantMetrics.shared.appended(tenant: tenant, count: appended.count) }
    }

    /// Appends on a connection the caller holds (a pool job of this store's, tools, tests).
    public static func append(
        _ batch: AppendBatch, claim: IdempotencyClaim? = nil, answer: StoredAnswer? = nil,
        signer: HistorySigner? = nil, on connection: PGConnection
    ) throws -> [Appended] {
        try append(
            StorageJSON.encodeString(BatchDocument(batch: batch, claim: claim, answer: answer)), signer: signer,
            on: connection)
    }

    /// Appends `document`; with a `signer`, signs each tenant's events in the same
    /// transaction (one of its own when the caller has none open), so no event commits
    /// without its signature.
    static func append(_ document: String, signer: HistorySigner?, on connection: PGConnection) throws -> [Appended] {
        guard let signer else { return try appendRows(document, on: connection).map(\.appended) }
        if connection.isInTransaction {
            let rows = try appendRows(document, on: connection)
            try connection.pipeline(
                AppendSignatures.inserts(AppendSignatures.sign(rows.compactMap(\.logEntry), with: signer)))
            return rows.map(\.appended)
        }
        do {
            do {
                // Two round trips, as the append and its signatures need: `BEGIN` with the
                // append, then the signatures with `COMMIT`.
                let rows = try appendRows(document, on: connection) {
                    try connection.pipeline([.init("BEGIN"), .init(appendStatement, [document])])[1]
                }
                let signatures = try AppendSignatures.sign(rows.compactMap(\.logEntry), with: signer)
                do {
                    try connection.pipeline(AppendSignatures.inserts(signatures) + [.init("COMMIT")])
                } catch let error as PGError where error.kind == .connection {
                    throw PGError(.commitUnknown, "the connection broke before the commit's answer: \(error.message)")
                }
                return rows.map(\.appended)
            } catch {
                if !connection.isBroken, connection.isInTransaction { _ = try? connection.execute("ROLLBACK") }
                throw error
            }
        } catch let error as PGError {
            // What the commit refused (a deferred key check: two spaces of one key) or
            // could not confirm, as the append's own statement would report it.
            throw StoreErrors.translate(error)
        }
    }

    /// One event as `eventlog.append` answers it.
    struct AppendedRow {
        var appended: Appended
        /// Its tenant, number in the tenant's log and digest (nil: an event of no tenant).
        var logEntry: AppendSignatures.LogEntry?
    }

    static let appendStatement =
        "SELECT event_position, event_version, event_tenant, event_tenant_seq, event_hash "
        + "FROM eventlog.append($1::jsonb)"

    static func appendRows(
        _ document: String, on connection: PGConnection,
        running statement: (() throws -> PGResult)? = nil
    ) throws -> [AppendedRow] {
        do {
            let result =
                try statement?()
                ?? connection.query(prepared: appendStatement, [document])
            return try (0..<result.rowCount).map { index in
                let row = RowReader(result, row: index, source: "eventlog.append")
                let appended = Appended(position: try row.int64(0), version: try row.int64(1))
                guard let tenant = row.optionalText(2), let number = try row.optionalInt64(3) else {
                    return AppendedRow(appended: appended, logEntry: nil)
                }
                return AppendedRow(
                    appended: appended,
                    logEntry: .init(tenant: tenant, tenantSeq: number, digest: try row.bytea(4)))
            }
        } catch let error as PGError where error.kind == .connection {
            // The statement is its own transaction (or the last before a COMMIT): sent,
            // and no answer came back, so it may have committed.
            throw StoreErrors.translate(
                PGError(.commitUnknown, "the connection broke during the append: \(error.message)"))
        } catch let error as PGError {
            throw StoreErrors.translate(error)
        }
    }
}
