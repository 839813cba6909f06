import Foundation
import RoboscopeDomain

/// Where a follower of the log stands: the last event it delivered.
///
/// Followers read in (transaction id, position) order and only events of
/// transactions older than every transaction still running (the snapshot's xmin).
/// A transaction that commits late therefore never lands behind the cursor, an
/// aborted one leaves nothing to wait for, and no timeout ever skips an event.
public struct LogCursor: Hashable, Comparable, Sendable {
    public var transactionID: UInt64
    public var position: Int64

    public static let start = LogCursor(transactionID: 0, position: 0)

    /// Delivery order: by transaction, then position.
    public static func < (lhs: LogCursor, rhs: LogCursor) -> Bool {
        (lhs.transactionID, lhs.position) < (rhs.transactionID, rhs.position)
    }

    public init(transactionID: UInt64, position: Int64) {
        self.transactionID = transactionID
        self.position = position
    }
}

/// An event as the log stores it.
public struct RecordedEvent: Sendable, Hashable {
    public var position: Int64
    public var transactionID: UInt64
    public var eventID: EntityID
    public var streamType: String
    public var streamID: EntityID
    public var version: Int64
    public var type: String
    public var data: JSONValue
    public var metadata: JSONValue
    public var recordedAt: Timestamp

    public var cursor: LogCursor { LogCursor(transactionID: transactionID, position: position) }
}

/// Reads the log in delivery order from a cursor.
public enum LogReader {
    static let columns = """
        position, transaction_id::text, event_id, stream_type, stream_id, stream_version, type, data, metadata,
        to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
        """

    /// Up to `limit` events after `cursor` that no running transaction can precede.
    public static func read(after cursor: LogCursor, limit: Int, on connection: PGConnection) throws -> [RecordedEvent] {
        let result = try connection.query(
            """
            SELECT \(columns) FROM eventlog.read_after($1::text::xid8, $2::bigint, $3::integer)
            """,
            [String(cursor.transactionID), String(cursor.position), String(limit)]
        )
        return try decode(result)
    }

    /// The cursor just after the event at `position`, for resuming from a client's `since`.
    public static func cursor(afterPosition position: Int64, on connection: PGConnection) throws -> LogCursor? {
        let result = try connection.query(
            "SELECT transaction_id::text FROM eventlog.events WHERE position = $1", [String(position)]
        )
        guard result.rowCount == 1, let xid = result.string(0, 0).flatMap(UInt64.init) else { return nil }
        return LogCursor(transactionID: xid, position: position)
    }

    static func decode(_ result: PGResult) throws -> [RecordedEvent] {
        try (0..<result.rowCount).map { row in
            RecordedEvent(
                position: result.int64(row, 0) ?? 0,
                transactionID: result.string(row, 1).flatMap(UInt64.init) ?? 0,
                eventID: EntityID(result.string(row, 2) ?? "") ?? .random(),
                streamType: result.string(row, 3) ?? "",
                streamID: EntityID(result.string(row, 4) ?? "") ?? .random(),
                version: result.int64(row, 5) ?? 0,
                type: result.string(row, 6) ?? "",
                data: try StorageJSON.decode(JSONValue.self, result.bytes(row, 7)!),
                metadata: try StorageJSON.decode(JSONValue.self, result.bytes(row, 8)!),
                recordedAt: Timestamp(rfc3339: result.string(row, 9) ?? "") ?? Timestamp(microsecondsSinceEpoch: 0)
            )
        }
    }
}
