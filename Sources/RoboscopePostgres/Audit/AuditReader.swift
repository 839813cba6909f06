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

    static func sql(_ query: AuditQuery) -> (String, PostgresBinds) {
        let (conditions, parameters) = query.whereClause()
        return (
            """
            SELECT e.position,
                   to_char(e.recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                   e.type, e.stream_type, e.stream_id::text, e.stream_version, e.data::text, e.metadata::text,
                   p.type, p.data::text
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
            let position = try cells.int64(0)
            cells.key = "position \(position)"
            let type = try cells.text(2)
            let streamType = try cells.text(3)
            let after = type.hasSuffix(".deleted") ? nil : try state(streamType, type, cells.bytes(6))
            // No previous event (a stream's first) leaves the before-state empty.
            let previousType = cells.optionalText(8)
            let before = try previousType.flatMap { previous in
                previous.hasSuffix(".deleted") ? nil : try state(streamType, previous, cells.bytes(9))
            }
            guard let recordedAt = Timestamp(rfc3339: try cells.text(1)) else {
                throw cells.corrupt(1, "is not a timestamp")
            }
            entries.append(
                AuditEntry(
                    position: position,
                    recordedAt: recordedAt,
                    type: type,
                    streamType: streamType,
                    streamID: try cells.id(4),
                    version: try cells.int64(5),
                    metadata: try cells.bytes(7).withUnsafeBytes { try StorageJSON.decode(EventMetadata.self, $0) },
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
