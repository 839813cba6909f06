import RoboscopeDomain
import RoboscopeWire

/// Reads the log as clients receive it (`eventlog.delivery_rows`): live for the
/// gateways' tailers, and by topic for catch-ups, the changes feed and snapshot heads.
public enum DeliveryReader {
    /// The columns of a delivery row, in the order every delivery statement selects them:
    /// the event's, then its marker's details (`eventColumns` leaves those out).
    enum Column: Int, SelectedColumn {
        case position, transactionID, streamType, streamID, version, type, data, actor, clientMutationID
        case recordedAt, workSessionID, spaceID, workSessionSeq, spaceSeq, traceParent
        case details

        var sql: String {
            switch self {
            case .position: "position"
            case .transactionID: "transaction_id::text"
            case .streamType: "stream_type"
            case .streamID: "stream_id"
            case .version: "stream_version"
            case .type: "type"
            case .data: "data::text"
            case .actor: "actor"
            case .clientMutationID: "client_mutation_id"
            case .recordedAt: "(extract(epoch FROM recorded_at) * 1000000)::bigint"
            case .workSessionID: "work_session_id"
            case .spaceID: "space_id"
            case .workSessionSeq: "work_session_seq"
            case .spaceSeq: "space_seq"
            case .traceParent: "traceparent"
            case .details: "details::text"
            }
        }
    }

    /// An event's columns, without its marker's details.
    static let eventColumns = Column.allCases.filter { $0 != .details }.map(\.sql).joined(separator: ", ")
    static let columns = Column.selectList

    /// Up to `limit` events after `cursor` that no running transaction can precede.
    public static func live(after cursor: LogCursor, limit: Int, on connection: PGConnection) throws -> [Delivery] {
        try decode(
            connection.query(
                "SELECT \(columns) FROM eventlog.deliveries($1::text::xid8, $2::bigint, $3::integer)",
                [cursor.transactionID, cursor.position, limit]
            ))
    }

    /// Up to `limit` events of `topic` with a position after `after`, in topic order;
    /// with `until`, only those at or before that cursor (a gateway's catch-up, which
    /// its live reads continue from there).
    ///
    /// On a topic, positions grow with topic_seq and with delivery order (the append
    /// numbers a topic under its lock), so "after a position" is exact, and every event
    /// of the topic up to the newest is committed: no horizon is needed.
    public static func topic(
        _ topic: Topic, after: Int64, until: LogCursor? = nil, limit: Int, on connection: PGConnection
    ) throws -> [Delivery] {
        var deliveries: [Delivery] = []
        try self.topic(topic, after: after, until: until, limit: limit, on: connection) { deliveries.append($0) }
        return deliveries
    }

    /// `topic(_:after:until:limit:on:)`, each event handed to `body` as soon as its
    /// row, and its marker's details, are in (see `rows`).
    ///
    /// The one good plan walks the topic's index (`events_work_session_idx`,
    /// `events_space_topic_idx`) in position order and stops after `limit`. When the
    /// statistics underestimate a topic (a session that has just grown, before autovacuum
    /// analyzes the table, or any session outside the most common values), the planner
    /// took a bitmap scan of every event after `after` and sorted them instead: each page
    /// of a catch-up read the whole rest of the topic, and a catch-up of n events cost n²
    /// (on 50,000 events: 98 ms a page against 13 ms). Settings local to the statement's
    /// own transaction leave the planner that one ordered path (and make a looked-up
    /// marker's details an index probe). A function with these settings would hold them
    /// too, but Postgres materializes a function's rows before sending the first, and the
    /// changes feed renders rows while later ones are produced.
    public static func topic(
        _ topic: Topic, after: Int64, until: LogCursor? = nil, limit: Int, on connection: PGConnection,
        each body: (Delivery) throws -> Void
    ) throws {
        try rows(of: topic, after: after, until: until, limit: limit, on: connection) { try body(decode($0)) }
    }

    /// The rows `topic(_:after:until:limit:on:each:)` reads, undecoded (decode each with
    /// `decode(_:)`): for a reader that decodes elsewhere.
    ///
    /// The page's marker events take their details from the page's own rows
    /// (`PageDetails`), those of its last transaction from the statement itself; the few
    /// left, whose details are older than the page, are looked up in one statement once
    /// the page is read, in the same snapshot (the transaction is repeatable read).
    static func rows(
        of topic: Topic, after: Int64, until: LogCursor? = nil, limit: Int, on connection: PGConnection,
        each body: (TopicRow) throws -> Void
    ) throws {
        let bound: PostgresBinds = until.map { [$0.transactionID, $0.position] } ?? [nil, nil]
        try connection.transaction(topicPlanSettings) {
            // Markers are on their work session's topic only (the append's routes), so a
            // space's page has no marker to look up and skips the walk to its end.
            var lastTransactionID: UInt64?
            if topic.kind == .workSession {
                let last = try connection.query(
                    prepared: lastTransactionStatement(topic, cursor: until != nil),
                    [topic.id, after, limit] + (until == nil ? [] : bound))
                if last.rowCount == 1 {
                    lastTransactionID = try RowReader(last, row: 0, source: "eventlog.events").uint64(0)
                }
            }
            var page = PageDetails<PGResult>()
            try connection.stream(
                prepared: topicStatement(topic), [topic.id, after, limit] + bound + [lastTransactionID]
            ) { row in
                let transactionID = try RowReader(row, row: 0, source: "eventlog.delivery_rows").uint64(
                    Column.transactionID)
                let event = detailsEvent(of: row, lookedUp: transactionID == lastTransactionID)
                try page.add(row, transactionID: transactionID, event: event) {
                    try body(TopicRow(result: $0.row, details: $0.details))
                }
            }
            // Without a last transaction the page ends at the topic's newest event: its last
            // transaction is whole (a transaction's rows commit together).
            let lookUps = page.finish(lastTransactionWhole: lastTransactionID == nil)
            let answers = lookUps.isEmpty ? [] : try details(of: lookUps, on: connection)
            try page.resolve(answers) { try body(TopicRow(result: $0.row, details: $0.details)) }
        }
    }

    /// What `row` is to `PageDetails`; `lookedUp`: it is of the page's last transaction,
    /// whose markers' details the statement gives (`Column.details`).
    static func detailsEvent(of row: PGResult, lookedUp: Bool) -> PageDetails<PGResult>.Event {
        switch row.string(0, Column.streamType) {
        case StreamType.marker.rawValue:
            guard row.string(0, Column.type) != EventType.markerDeleted.rawValue,
                let stream = row.string(0, Column.streamID)
            else { return .other }
            return lookedUp
                ? .markerLookedUp(details: row.bytes(0, Column.details).map { Array($0) })
                : .marker(stream: stream)
        case StreamType.markerDetails.rawValue:
            guard let stream = row.string(0, Column.streamID) else { return .other }
            let deleted = row.string(0, Column.type) == EventType.markerDetailsDeleted.rawValue
            return .details(stream: stream, data: deleted ? nil : row.bytes(0, Column.data).map { Array($0) })
        default:
            return .other
        }
    }

    /// The view's details of each of `rows` (marker events of a page), in their order.
    static func details(of rows: [PGResult], on connection: PGConnection) throws -> [[UInt8]?] {
        let positions = try rows.map {
            try RowReader($0, row: 0, source: "eventlog.delivery_rows").int64(Column.position)
        }
        let result = try connection.query(
            prepared: detailsLookUpStatement, ["{" + positions.map(String.init).joined(separator: ",") + "}"])
        var answers: [Int64: [UInt8]] = [:]
        for index in 0..<result.rowCount {
            let row = RowReader(result, row: index, source: "eventlog.delivery_rows")
            answers[try row.int64(0)] = row.optionalBytes(1)
        }
        return positions.map { answers[$0] }
    }

    /// `$1` the positions of marker events: each one's details, from the view itself.
    static let detailsLookUpStatement = """
        SELECT position, details::text FROM eventlog.delivery_rows WHERE position = ANY($1::text::bigint[])
        """

    /// Where the page of `topic` after `after` ends when it holds `count` events: the
    /// position of the `count`-th event after `after`, nil when the topic has fewer.
    ///
    /// It walks the topic's index alone (an index-only scan: 0.4 ms for 1,000 events), so
    /// a reader can start on the page after this one before this one is read. Every event
    /// of the topic up to the newest is committed and a later commit gets a later
    /// position, so the answer is the last position a read of the page gives, then or later.
    public static func pageEnd(of topic: Topic, after: Int64, count: Int, on connection: PGConnection) throws -> Int64?
    {
        let result = try connection.transaction(topicPlanSettings) {
            try connection.query(prepared: pageEndStatement(topic), [topic.id, after, count])
        }
        guard result.rowCount == 1 else { return nil }
        return try RowReader(result, row: 0, source: "eventlog.events").int64(0)
    }

    /// `$1` the topic's id, `$2` the position after which, `$3` the count.
    static func pageEndStatement(_ topic: Topic) -> String {
        """
        SELECT position FROM eventlog.events
        WHERE \(membership(topic)) AND position > $2::bigint
        ORDER BY \(topicOrder(topic)) OFFSET $3::integer - 1 LIMIT 1
        """
    }

    /// The settings of a topic's reads (`rows`, `pageEnd`), local to their transaction:
    /// the one ordered path (`topic`), and that path planned once per connection. Every
    /// statement read under them is prepared, and with one plan left to it, its generic
    /// plan is its custom one. Parsed and planned at each page (a view to expand, the
    /// log's dozen indexes to weigh), a page of 100 events took 0.6-0.9 ms longer, of 3-4.
    static let topicPlanSettings = """
        BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off;
        SET LOCAL plan_cache_mode = force_generic_plan
        """

    /// `$1` the topic's id, `$2` the position after which, `$3` the limit, `$4`/`$5` the
    /// cursor or nulls, `$6` the page's last transaction (`lastTransactionStatement`) or null.
    ///
    /// The view's details (its look-up runs only where a statement asks for the column)
    /// come only with the marker events of the page's last transaction, which the page's
    /// end may cut: the page finds the others in its own rows (`PageDetails`), but a
    /// page inside one large transaction (a bulk create of 1,000 markers is 2,000 events)
    /// would otherwise hand out no row before its end. `Column.details`: those details.
    static func topicStatement(_ topic: Topic) -> String {
        """
        SELECT \(eventColumns), CASE WHEN transaction_id = $6::text::xid8 THEN details::text END
        FROM eventlog.delivery_rows
        WHERE \(membership(topic)) AND position > $2::bigint
          AND ($4::text IS NULL OR (transaction_id, position) <= ($4::text::xid8, $5::bigint))
        ORDER BY \(topicOrder(topic)) LIMIT $3::integer
        """
    }

    /// The transaction of the last row of the page `topicStatement` reads with the same
    /// `$1`-`$3` (and `$4`/`$5` with a cursor): that of the `$3`-th event of the topic
    /// after `$2` (an index-only walk of the topic's index), or, with a cursor, of the
    /// topic's last event at or before it (a walk back from the topic's newest),
    /// whichever comes first. No row when the page ends at the topic's newest event
    /// without a cursor: its last transaction is then whole.
    static func lastTransactionStatement(_ topic: Topic, cursor: Bool) -> String {
        let limitEnd = pageEndStatement(topic)
        let cursorEnd = """
            SELECT position FROM eventlog.events
            WHERE \(membership(topic)) AND (transaction_id, position) <= ($4::text::xid8, $5::bigint)
            ORDER BY \(topicOrder(topic, descending: true)) LIMIT 1
            """
        let end = cursor ? "LEAST((\(limitEnd)), (\(cursorEnd)))" : "(\(limitEnd))"
        return "SELECT transaction_id::text FROM eventlog.events WHERE position = \(end) AND position > $2::bigint"
    }

    /// The topic's newest event (at or before `until`, when given): the position to
    /// continue from and its topic_seq; nil when the topic has no event.
    ///
    /// Prepared: a snapshot read and every subscription ask for it, and it runs in a
    /// fraction of the time parsing and planning it takes (`GET /markers/{id}` took 0.13
    /// ms longer, of 0.84). Its generic plan walks the topic's index back like its custom
    /// ones (TopicPlanTests), since only that index gives its order without a sort.
    public static func head(of topic: Topic, until: LogCursor? = nil, on connection: PGConnection) throws -> TopicHead?
    {
        let bound: PostgresBinds = until.map { [$0.transactionID, $0.position] } ?? [nil, nil]
        let result = try connection.query(prepared: headStatement(topic), [topic.id] + bound)
        guard result.rowCount == 1 else { return nil }
        let row = RowReader(result, row: 0, source: "eventlog.events")
        return TopicHead(position: try row.int64(0), topicSeq: try row.int64(1))
    }

    /// The topic's sequence number of its newest event at or before `position` (nil when
    /// the topic has none there): how many events a catch-up from `position` skips, so that
    /// the head's number minus it is the catch-up's size (a topic is numbered without gaps).
    /// One probe of the topic's index, walked back from `position`.
    public static func sequence(
        of topic: Topic, atOrBefore position: Int64, on connection: PGConnection
    ) throws -> Int64? {
        let result = try connection.query(prepared: sequenceStatement(topic), [topic.id, position])
        guard result.rowCount == 1 else { return nil }
        return try RowReader(result, row: 0, source: "eventlog.events").int64(0)
    }

    /// `$1` the topic's id, `$2` the position.
    static func sequenceStatement(_ topic: Topic) -> String {
        """
        SELECT \(sequenceColumn(topic)) FROM eventlog.events
        WHERE \(membership(topic)) AND position <= $2::bigint
        ORDER BY \(topicOrder(topic, descending: true)) LIMIT 1
        """
    }

    /// `$1` the topic's id, `$2`/`$3` the cursor or nulls.
    static func headStatement(_ topic: Topic) -> String {
        """
        SELECT position, \(sequenceColumn(topic)) FROM eventlog.events
        WHERE \(membership(topic))
          AND ($2::text IS NULL OR (transaction_id, position) <= ($2::text::xid8, $3::bigint))
        ORDER BY \(topicOrder(topic, descending: true)) LIMIT 1
        """
    }

    /// The events of a topic: its parameter `$1` is the topic's id. Each condition
    /// matches the partial index that keeps the topic in position order.
    ///
    /// The id is a range of one value, and the order names it (`topicOrder`), so that
    /// only the topic's index gives the order without a sort. With `id = $1` and
    /// `ORDER BY position`, the log's position index gives that order too, and the
    /// planner walked it, filtering out every other topic's events, whenever it took the
    /// topic for a large share of the log. For a topic gone quiet while others wrote,
    /// that walk crosses every event since its last: 394 ms for a page of a session
    /// 200,000 events back, 244 ms for its head, against a fraction of a millisecond by
    /// the topic's index (TopicPlanTests). The B-tree starts the scan at (id, position)
    /// all the same, since the range's lower bound is inclusive.
    static func membership(_ topic: Topic) -> String {
        switch topic.kind {
        case .workSession: return "work_session_id >= $1::uuid AND work_session_id <= $1::uuid"
        case .space: return "space_id >= $1::uuid AND space_id <= $1::uuid AND space_seq IS NOT NULL"
        }
    }

    /// The order of the topic's index; with `membership`, the position order of the topic.
    static func topicOrder(_ topic: Topic, descending: Bool = false) -> String {
        let column = topic.kind == .workSession ? "work_session_id" : "space_id"
        return descending ? "\(column) DESC, position DESC" : "\(column), position"
    }

    static func sequenceColumn(_ topic: Topic) -> String {
        topic.kind == .workSession ? "work_session_seq" : "space_seq"
    }

    /// Where a new follower starts: after the last event no running transaction can precede.
    public static func head(on connection: PGConnection) throws -> LogCursor {
        let result = try connection.query("SELECT transaction_id::text, position FROM eventlog.follow_head()")
        let row = RowReader(result, row: 0, source: "eventlog.follow_head()")
        return LogCursor(transactionID: try row.uint64(0), position: try row.int64(1))
    }

    /// The newest position in the log (0 when empty).
    public static func newestPosition(on connection: PGConnection) throws -> Int64 {
        let result = try connection.query(prepared: "SELECT coalesce(max(position), 0) FROM eventlog.events")
        return try RowReader(result, row: 0, source: "eventlog.events").int64(0)
    }

    /// Whether the topic's entity exists now (a subscription to anything else is refused).
    public static func exists(_ topic: Topic, on connection: PGConnection) throws -> Bool {
        let table = topic.kind == .space ? "spaces" : "work_sessions"
        return try connection.query(prepared: "SELECT 1 FROM \(table) WHERE id = $1::uuid", [topic.id]).rowCount == 1
    }

    static func decode(_ result: PGResult) throws -> [Delivery] {
        try (0..<result.rowCount).map { try decode(result, row: $0) }
    }

    static func decode(_ row: TopicRow) throws -> Delivery {
        try decode(row.result, row: 0, details: row.details)
    }

    static func decode(_ result: PGResult, row index: Int) throws -> Delivery {
        try decode(result, row: index, details: result.bytes(index, Column.details).map { Array($0) })
    }

    static func decode(_ result: PGResult, row index: Int, details: [UInt8]?) throws -> Delivery {
        var row = RowReader(result, row: index, source: "eventlog.delivery_rows")
        let position = try row.int64(Column.position)
        row.key = "position \(position)"
        var topics: [TopicPlace] = []
        if let session = try row.optionalID(Column.workSessionID) {
            guard let sequence = try row.optionalInt64(Column.workSessionSeq) else {
                throw row.corrupt(Column.workSessionSeq, "is null on a work session's event")
            }
            topics.append(TopicPlace(Topic(.workSession, session), sequence))
        }
        if let sequence = try row.optionalInt64(Column.spaceSeq) {
            guard let space = try row.optionalID(Column.spaceID) else {
                throw row.corrupt(Column.spaceID, "is null on a space's topic")
            }
            topics.append(TopicPlace(Topic(.space, space), sequence))
        }
        return Delivery(
            cursor: LogCursor(transactionID: try row.uint64(Column.transactionID), position: position),
            change: RecordedChange(
                position: position,
                streamType: try row.text(Column.streamType),
                streamID: try row.id(Column.streamID),
                version: try row.int64(Column.version),
                type: try row.text(Column.type),
                data: try row.bytes(Column.data),
                actor: try row.text(Column.actor),
                recordedAt: try row.timestamp(Column.recordedAt),
                details: details,
                clientMutationID: row.optionalText(Column.clientMutationID),
                traceParent: row.optionalText(Column.traceParent).flatMap(TraceParent.init),
                topics: topics
            )
        )
    }
}

/// A row of a topic's page, undecoded, with its marker's details (nil for any other event).
struct TopicRow {
    let result: PGResult
    let details: [UInt8]?
}

/// The newest event of a topic a reader reflects: `position` is the `since` that
/// continues from there, `topicSeq` its number on the topic.
public struct TopicHead: Hashable, Sendable {
    public var position: Int64
    public var topicSeq: Int64

    public static let empty = TopicHead(position: 0, topicSeq: 0)

    public init(position: Int64, topicSeq: Int64) {
        self.position = position
        self.topicSeq = topicSeq
    }
}
