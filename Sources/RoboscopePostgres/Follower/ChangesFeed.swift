import RoboscopeDomain

/// The changes feed (`GET /api/v1/changes`): a topic's events after a position, in topic
/// order, read through the same query and decoder as the gateways' catch-up.
public struct ChangesFeed: Sendable {
    public let pool: PostgresPool
    /// A standby pages are read on when it has caught up with the topic (`StandbyReads`).
    public let standby: PostgresPool?
    /// How many rows the connection's thread hands over at a time.
    static let batchSize = 64

    public init(pool: PostgresPool, standby: PostgresPool? = nil) {
        self.pool = pool
        self.standby = standby
    }

    /// The standby when its prefix of the topic ends where the primary's does, else the
    /// primary (also when the standby cannot answer).
    func source(for topic: Topic) async throws -> PostgresPool {
        guard let standby else { return pool }
        let primaryHead = try await pool.translatingErrors { try DeliveryReader.head(of: topic, on: $0) }
        if let standbyHead = try? await standby.translatingErrors({ try DeliveryReader.head(of: topic, on: $0) }),
            StandbyReads.mayRead(primaryHead: primaryHead, standbyHead: standbyHead)
        {
            StandbyReads.count("changes", .standby)
            return standby
        }
        StandbyReads.count("changes", .primary)
        return pool
    }

    /// One page: up to `limit` events after `since`, each folded into `page` by `add`, the
    /// position of the last, and whether more follow. Nil when the topic has no event at
    /// all (an unknown topic).
    ///
    /// The connection's thread only reads rows; they are decoded and `add`ed on the
    /// caller's task while later rows are still being read. Linux runs a thread woken by
    /// a local socket on the waker's core, so work done on the reading thread shares a
    /// core with the Postgres backend producing the rows and slows it: a page took 15 ms
    /// rendered there, 11 with the two pinned apart (docs/benchmarks.md).
    public func page<Page: Sendable>(
        _ topic: Topic, since: Int64, limit: Int, into page: Page,
        adding add: @escaping @Sendable (inout Page, Delivery) throws -> Void
    ) async throws -> (page: Page, last: Int64?, hasMore: Bool)? {
        let source = try await source(for: topic)
        let (batches, sink) = AsyncThrowingStream<RowBatch, any Error>.makeStream()
        async let read = Self.finishing(
            sink,
            source.translatingErrors { connection -> (count: Int, exists: Bool) in
                var count = 0
                var batch: [TopicRow] = []
                try DeliveryReader.rows(of: topic, after: since, limit: limit + 1, on: connection) { row in
                    count += 1
                    guard count <= limit else { return }
                    batch.append(row)
                    if batch.count == Self.batchSize {
                        sink.yield(RowBatch(rows: batch))
                        batch = []
                    }
                }
                if !batch.isEmpty { sink.yield(RowBatch(rows: batch)) }
                sink.finish()
                let exists = try count > 0 || DeliveryReader.head(of: topic, on: connection) != nil
                return (count, exists)
            })
        var page = page
        var last: Int64?
        do {
            for try await batch in batches {
                for row in batch.rows {
                    let delivery = try DeliveryReader.decode(row)
                    try add(&page, delivery)
                    last = delivery.change.position
                }
            }
        } catch {
            // The read's own error is the one to report (translated, as `read` throws it).
            _ = try await read
            throw error
        }
        let (count, exists) = try await read
        guard exists else { return nil }
        return (page, last, count > limit)
    }

    /// `read`'s result, the stream of its rows ended when it fails: whether the read
    /// threw or never ran (a job the pool refuses while Postgres is unreachable), the
    /// page would otherwise wait for rows forever. A read that succeeds ends the stream
    /// itself, once its rows are in and before it looks for the topic's head.
    private static func finishing<T: Sendable>(
        _ sink: AsyncThrowingStream<RowBatch, any Error>.Continuation, _ read: @autoclosure () async throws -> T
    ) async throws -> T {
        do {
            return try await read()
        } catch {
            sink.finish(throwing: error)
            throw error
        }
    }

    /// The newest position of each topic (topics without events are left out), in one
    /// statement: what the changes feed's long polls wait on. Each head is found by its
    /// topic's index, as `DeliveryReader.head` finds one.
    public func heads(of topics: [Topic]) async throws -> [Topic: Int64] {
        let sessions = topics.filter { $0.kind == .workSession }.map(\.id.description)
        let spaces = topics.filter { $0.kind == .space }.map(\.id.description)
        return try await pool.translatingErrors { connection in
            let result = try connection.query(
                prepared: Self.headsStatement,
                [
                    "{" + sessions.joined(separator: ",") + "}", "{" + spaces.joined(separator: ",") + "}",
                ])
            var heads: [Topic: Int64] = [:]
            for index in 0..<result.rowCount {
                let row = RowReader(result, row: index, source: "eventlog.events")
                guard let text = result.string(index, 0), let topic = Topic(text), result.string(index, 1) != nil else {
                    continue
                }
                heads[topic] = try row.int64(1)
            }
            return heads
        }
    }

    static let headsStatement = """
        SELECT 'work_session:' || s.id, (SELECT e.position FROM eventlog.events e
                                          WHERE e.work_session_id >= s.id AND e.work_session_id <= s.id
                                          ORDER BY e.work_session_id DESC, e.position DESC LIMIT 1)
        FROM unnest($1::uuid[]) AS s(id)
        UNION ALL
        SELECT 'space:' || s.id, (SELECT e.position FROM eventlog.events e
                                   WHERE e.space_id >= s.id AND e.space_id <= s.id AND e.space_seq IS NOT NULL
                                   ORDER BY e.space_id DESC, e.position DESC LIMIT 1)
        FROM unnest($2::uuid[]) AS s(id)
        """

    /// The position of the last event of the page of `limit` after `since`, when the page
    /// is full (nil otherwise): the `since` of the page after it, known before it is read.
    public func pageEnd(_ topic: Topic, since: Int64, limit: Int) async throws -> Int64? {
        try await pool.translatingErrors { connection in
            try DeliveryReader.pageEnd(of: topic, after: since, count: limit, on: connection)
        }
    }
}

/// Rows (one-row results) read on a connection's thread, handed to the task that decodes
/// them. Safe to send: a result is complete when `PQgetResult` returns it, libpq never
/// touches it again, and the reading thread keeps no reference once it has handed the
/// batch over.
struct RowBatch: @unchecked Sendable {
    let rows: [TopicRow]
}
