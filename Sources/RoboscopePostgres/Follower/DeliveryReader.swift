import RoboscopeDomain

/// Reads `eventlog.deliveries` (schema/0006_deliveries.sql) for the gateways.
public enum DeliveryReader {
    static let columns = """
        position, transaction_id::text, stream_type, stream_id, stream_version, type, data::text, actor,
        to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), work_session_id, space_id, details::text
        """

    /// Up to `limit` events after `cursor` that no running transaction can precede.
    public static func live(after cursor: LogCursor, limit: Int, on connection: PGConnection) throws -> [Delivery] {
        try decode(connection.query(
            "SELECT \(columns) FROM eventlog.deliveries($1::text::xid8, $2::bigint, $3::integer)",
            [String(cursor.transactionID), String(cursor.position), String(limit)]
        ))
    }

    /// The events of one topic after `cursor`, up to and including `until`.
    public static func topic(
        _ topic: Topic, after cursor: LogCursor, until: LogCursor, limit: Int, on connection: PGConnection
    ) throws -> [Delivery] {
        var session: String?, space: String?
        switch topic.kind {
        case .workSession: session = topic.id.description
        case .space: space = topic.id.description
        }
        return try decode(connection.query(
            """
            SELECT \(columns) FROM eventlog.deliveries($1::text::xid8, $2::bigint, $3::integer,
                $4::text::xid8, $5::bigint, $6::uuid, $7::uuid)
            """,
            [String(cursor.transactionID), String(cursor.position), String(limit),
             String(until.transactionID), String(until.position), session, space]
        ))
    }

    /// Where a new follower starts: after the last event no running transaction can precede.
    public static func head(on connection: PGConnection) throws -> LogCursor {
        let result = try connection.query("SELECT transaction_id::text, position FROM eventlog.follow_head()")
        return LogCursor(
            transactionID: result.string(0, 0).flatMap(UInt64.init) ?? 0, position: result.int64(0, 1) ?? 0
        )
    }

    /// Whether the topic's entity exists now (a subscription to anything else is refused).
    public static func exists(_ topic: Topic, on connection: PGConnection) throws -> Bool {
        let table = topic.kind == .space ? "spaces" : "work_sessions"
        return try connection.query("SELECT 1 FROM \(table) WHERE id = $1::uuid", [topic.id.description]).rowCount == 1
    }

    static func decode(_ result: PGResult) throws -> [Delivery] {
        try (0..<result.rowCount).map { row in
            guard let streamID = result.string(row, 3).flatMap(EntityID.init) else {
                throw PGError(.statement, "eventlog.deliveries returned a row without a stream id")
            }
            let position = result.int64(row, 0) ?? 0
            return Delivery(
                cursor: LogCursor(transactionID: result.string(row, 1).flatMap(UInt64.init) ?? 0, position: position),
                change: RecordedChange(
                    position: position,
                    streamType: result.string(row, 2) ?? "",
                    streamID: streamID,
                    version: result.int64(row, 4) ?? 0,
                    type: result.string(row, 5) ?? "",
                    data: result.bytes(row, 6).map { Array($0) } ?? [],
                    actor: result.string(row, 7) ?? "anonymous",
                    recordedAt: result.string(row, 8).flatMap(Timestamp.init(rfc3339:)) ?? Timestamp(microsecondsSinceEpoch: 0),
                    details: result.bytes(row, 11).map { Array($0) }
                ),
                workSessionID: result.string(row, 9).flatMap(EntityID.init),
                spaceID: result.string(row, 10).flatMap(EntityID.init)
            )
        }
    }
}
