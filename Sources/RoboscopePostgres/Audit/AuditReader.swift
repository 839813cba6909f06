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

    static func sql(_ query: AuditQuery) -> (String, [String?]) {
        let (conditions, parameters) = query.whereClause()
        return ("""
            SELECT e.position,
                   to_char(e.recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                   e.type, e.stream_type, e.stream_id::text, e.stream_version, e.data::text, e.metadata::text,
                   p.type, p.data::text
            FROM eventlog.events e
            LEFT JOIN eventlog.events p
                   ON p.stream_type = e.stream_type AND p.stream_id = e.stream_id AND p.stream_version = e.stream_version - 1
            WHERE \(conditions)
            ORDER BY e.position \(query.descending ? "DESC" : "")
            LIMIT \(query.limit + 1)
            """, parameters)
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
            let type = result.string(row, 2) ?? ""
            let streamType = result.string(row, 3) ?? ""
            let after = type.hasSuffix(".deleted") ? nil : try state(streamType, type, result.bytes(row, 6))
            let previousType = result.string(row, 8) ?? ""
            let before = previousType.hasSuffix(".deleted") ? nil : try state(streamType, previousType, result.bytes(row, 9))
            entries.append(AuditEntry(
                position: result.int64(row, 0) ?? 0,
                recordedAt: result.string(row, 1).flatMap(Timestamp.init(rfc3339:)) ?? Timestamp(microsecondsSinceEpoch: 0),
                type: type,
                streamType: streamType,
                streamID: try streamID(result.string(row, 4)),
                version: result.int64(row, 5) ?? 0,
                metadata: try StorageJSON.decode(EventMetadata.self, result.bytes(row, 7)!),
                changes: FieldChange.between(before, after)
            ))
        }
        let more = result.rowCount > query.limit
        if query.descending {
            return AuditPage(entries: entries, nextAfter: nil, nextBefore: more ? entries.last?.position : nil)
        }
        return AuditPage(entries: entries, nextAfter: more ? entries.last?.position : nil)
    }

    static func state(_ streamType: String, _ type: String, _ bytes: UnsafeRawBufferPointer?) throws -> JSONObject? {
        guard let bytes else { return nil }
        return try StoredData.object(streamType: streamType, type: type, data: Array(bytes))
    }

    static func streamID(_ text: String?) throws -> EntityID {
        guard let id = text.flatMap(EntityID.init) else { throw PGError(.statement, "an event without a stream id") }
        return id
    }
}
