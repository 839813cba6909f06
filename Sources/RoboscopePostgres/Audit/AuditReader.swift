import RoboscopeDomain

/// Reads the audit trail from the log: each event with the state before it (the
/// previous event of its stream), turned into the fields it changed.
public struct AuditReader: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func page(_ query: AuditQuery) async throws -> AuditPage {
        try await pool.translatingErrors { try Self.page(query, on: $0) }
    }

    /// What `sql` selects: an event and the previous event of its stream.
    enum Column: Int, SelectedColumn {
        case position, recordedAt, type, streamType, streamID, streamVersion, data, metadata
        case previousType, previousData

        var sql: String {
            switch self {
            case .position: "e.position"
            case .recordedAt: #"to_char(e.recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"#
            case .type: "e.type"
            case .streamType: "e.stream_type"
            case .streamID: "e.stream_id::text"
            case .streamVersion: "e.stream_version"
            case .data: "e.data::text"
            case .metadata: "e.metadata::text"
            case .previousType: "p.type"
            case .previousData: "p.data::text"
            }
        }
    }

    static func sql(_ query: AuditQuery) -> (String, PostgresBinds) {
        let (conditions, parameters) = query.whereClause()
        return (
            """
            SELECT \(Column.selectList)
            FROM eventlog.events e
            LEFT JOIN eventlog.events p
                   ON p.stream_type = e.stream_type AND p.stream_id = e.stream_id
                  AND p.stream_version = e.stream_version - 1
            WHERE \(conditions)
            ORDER BY e.position \(query.descending ? "DESC" : "")
            LIMIT \(query.limit + 1)
            """, parameters
        )
    }

    /// The plan Postgres picks for a query (docs and tests show each filter uses an index).
    public static func explain(_ query: AuditQuery, on connection: PGConnection) throws -> String {
        let (sql, parameters) = sql(query)
        let result = try connection.query("EXPLAIN " + sql, parameters)
        return (0..<result.rowCount).compactMap { result.string($0, 0) }.joined(separator: "\n")
    }

    static func page(_ query: AuditQuery, on connection: PGConnection) throws -> AuditPage {
        let (sql, parameters) = sql(query)
        let result = try connection.query(sql, parameters)
        var entries: [AuditEntry] = []
        for row in 0..<min(result.rowCount, query.limit) {
            var cells = RowReader(result, row: row, source: "eventlog.events")
            let position = try cells.int64(Column.position)
            cells.key = "position \(position)"
            let type = try cells.text(Column.type)
            let streamType = try cells.text(Column.streamType)
            let after = type.hasSuffix(".deleted") ? nil : try state(streamType, type, cells.bytes(Column.data))
            // No previous event (a stream's first) leaves the before-state empty.
            let previousType = cells.optionalText(Column.previousType)
            let before = try previousType.flatMap { previous in
                previous.hasSuffix(".deleted") ? nil : try state(streamType, previous, cells.bytes(Column.previousData))
            }
            guard let recordedAt = Timestamp(rfc3339: try cells.text(Column.recordedAt)) else {
                throw cells.corrupt(Column.recordedAt, "is not a timestamp")
            }
            entries.append(
                AuditEntry(
                    position: position,
                    recordedAt: recordedAt,
                    type: type,
                    streamType: streamType,
                    streamID: try cells.id(Column.streamID),
                    version: try cells.int64(Column.streamVersion),
                    metadata: try cells.bytes(Column.metadata).withUnsafeBytes {
                        try StorageJSON.decode(EventMetadata.self, $0)
                    },
                    changes: FieldChange.between(before, after)
                ))
        }
        let more = result.rowCount > query.limit
        if query.descending {
            return AuditPage(entries: entries, nextAfter: nil, nextBefore: more ? entries.last?.position : nil)
        }
        return AuditPage(entries: entries, nextAfter: more ? entries.last?.position : nil)
    }

    static func state(_ streamType: String, _ type: String, _ bytes: [UInt8]) throws -> JSONObject? {
        try StoredData.object(streamType: streamType, type: type, data: bytes)
    }
}
