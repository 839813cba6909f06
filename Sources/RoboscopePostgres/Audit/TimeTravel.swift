import RoboscopeDomain

/// Entities as they were at a moment, folded from the log alone (the projections
/// only know the present).
public struct TimeTravel: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func space(_ id: EntityID, asOf moment: AsOf) async throws -> Space {
        try await state(Space.self, .space, id, moment)
    }

    public func workSession(_ id: EntityID, asOf moment: AsOf) async throws -> WorkSession {
        try await state(WorkSession.self, .workSession, id, moment)
    }

    public func marker(_ id: EntityID, asOf moment: AsOf) async throws -> MarkerWithDetails {
        let marker = try await state(Marker.self, .marker, id, moment)
        let details = try await run { connection in
            try Self.last(.markerDetails, id, moment, on: connection).flatMap { row in
                row.deleted ? nil : try StorageJSON.decode(MarkerDetails.self, row.data)
            }
        }
        return MarkerWithDetails(marker: marker, details: details)
    }

    /// The session's markers (with details) at the moment, in the order REST lists them.
    public func markers(workSessionID: EntityID, asOf moment: AsOf) async throws -> [MarkerWithDetails] {
        try await run { connection in
            let (bound, parameter) = Self.bound(moment, "$2")
            let sql = """
                SELECT DISTINCT ON (e.stream_type, e.stream_id) \(StreamState.selectList)
                FROM eventlog.events e
                WHERE e.work_session_id = $1::uuid AND e.stream_type IN ($3, $4) AND \(bound)
                ORDER BY e.stream_type, e.stream_id, e.stream_version DESC
                """
            let result = try connection.query(
                sql, [workSessionID, parameter, StreamType.marker.rawValue, StreamType.markerDetails.rawValue])
            var markers: [Marker] = []
            var details: [String: MarkerDetails] = [:]
            for row in 0..<result.rowCount {
                var cells = RowReader(result, row: row, source: "eventlog.events")
                let streamID = try cells.text(StreamState.streamID)
                cells.key = "stream \(streamID)"
                guard !(try cells.text(StreamState.type)).hasSuffix(".deleted") else { continue }
                guard let bytes = result.bytes(row, StreamState.data) else {
                    throw cells.corrupt(StreamState.data, "is null")
                }
                if try cells.text(StreamState.streamType) == StreamType.marker.rawValue {
                    markers.append(try StorageJSON.decode(Marker.self, bytes))
                } else {
                    details[streamID] = try StorageJSON.decode(MarkerDetails.self, bytes)
                }
            }
            return
                markers
                .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
                .map { MarkerWithDetails(marker: $0, details: details[$0.id.description]) }
        }
    }

    // MARK: Plumbing

    private func state<T: Decodable & Sendable>(
        _ type: T.Type, _ stream: StreamType, _ id: EntityID, _ moment: AsOf
    ) async throws -> T {
        try await run { connection in
            let name = stream.spokenName
            guard let row = try Self.last(stream, id, moment, on: connection) else {
                throw DomainError(
                    .notFound, "\(name) \(id) did not exist yet at \(moment)",
                    details: ["id": .string(id.description), "reason": .string("not_yet_created")])
            }
            if row.deleted {
                throw DomainError(
                    .notFound,
                    "\(name) \(id) was deleted at \(row.recordedAt) (position \(row.position)), before \(moment)",
                    details: [
                        "id": .string(id.description), "reason": .string("deleted"),
                        "deleted_at": .string(row.recordedAt), "deleted_position": .integer(row.position),
                    ])
            }
            return try StorageJSON.decode(T.self, row.data)
        }
    }

    struct LastEvent {
        var position: Int64
        var deleted: Bool
        var recordedAt: String
        var data: UnsafeRawBufferPointer
        let result: PGResult  // keeps `data` alive
    }

    /// The stream's last event at the moment: an index scan backwards from the newest version.
    static func last(
        _ stream: StreamType, _ id: EntityID, _ moment: AsOf, on connection: PGConnection
    ) throws -> LastEvent? {
        let (bound, parameter) = bound(moment, "$3")
        let result = try connection.query(
            """
            SELECT \(LastEventColumn.selectList)
            FROM eventlog.events e
            WHERE e.stream_type = $1 AND e.stream_id = $2::uuid AND \(bound)
            ORDER BY e.stream_version DESC
            LIMIT 1
            """, [stream, id, parameter])
        guard result.rowCount == 1 else { return nil }
        var cells = RowReader(result, row: 0, source: "eventlog.events")
        let position = try cells.int64(LastEventColumn.position)
        cells.key = "position \(position)"
        guard let data = result.bytes(0, LastEventColumn.data) else {
            throw cells.corrupt(LastEventColumn.data, "is null")
        }
        return LastEvent(
            position: position, deleted: try cells.text(LastEventColumn.type).hasSuffix(".deleted"),
            recordedAt: try cells.text(LastEventColumn.recordedAt), data: data, result: result
        )
    }

    /// What `last` selects of a stream's last event.
    enum LastEventColumn: Int, SelectedColumn {
        case position, type, recordedAt, data

        var sql: String {
            switch self {
            case .position: "e.position"
            case .type: "e.type"
            case .recordedAt: #"to_char(e.recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')"#
            case .data: "e.data::text"
            }
        }
    }

    /// What `markers(workSessionID:asOf:)` selects of each stream's last event.
    enum StreamState: Int, SelectedColumn {
        case streamType, streamID, type, data

        var sql: String {
            switch self {
            case .streamType: "e.stream_type"
            case .streamID: "e.stream_id::text"
            case .type: "e.type"
            case .data: "e.data::text"
            }
        }
    }

    static func bound(_ moment: AsOf, _ placeholder: String) -> (String, String) {
        switch moment {
        case .time(let time): return ("e.recorded_at <= \(placeholder)::timestamptz", time.formatted(.storage))
        case .position(let position): return ("e.position <= \(placeholder)::bigint", String(position))
        }
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await pool.translatingErrors(body)
    }
}
