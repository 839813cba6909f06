import RoboscopeDomain

extension TimeTravel {
    /// Every space that existed at the moment.
    public func spaces(asOf moment: AsOf) async throws -> [Space] {
        try await states(Space.self, .space, parentColumn: nil, parent: nil, moment)
            .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    /// The space's work sessions at the moment.
    public func workSessions(spaceID: EntityID, asOf moment: AsOf) async throws -> [WorkSession] {
        try await states(WorkSession.self, .workSession, parentColumn: "space_id", parent: spaceID, moment)
            .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    /// The last state of every stream of a kind (under one parent) at the moment, deleted ones left out.
    private func states<T: Decodable & Sendable>(
        _ type: T.Type, _ stream: StreamType, parentColumn: String?, parent: EntityID?, _ moment: AsOf
    ) async throws -> [T] {
        try await run { connection in
            let (bound, parameter) = Self.bound(moment, "$2")
            var sql =
                """
                SELECT DISTINCT ON (e.stream_id) e.type, e.data::text FROM eventlog.events e \
                WHERE e.stream_type = $1 AND \(bound)
                """
            var parameters: PostgresBinds = [stream, parameter]
            if let parentColumn, let parent {
                parameters.append(parent)
                sql += " AND e.\(parentColumn) = $3::uuid"
            }
            sql += " ORDER BY e.stream_id, e.stream_version DESC"
            let result = try connection.query(sql, parameters)
            return try (0..<result.rowCount).compactMap { row -> T? in
                let cells = RowReader(result, row: row, source: "eventlog.events")
                guard try !cells.text(0).hasSuffix(".deleted") else { return nil }
                return try StorageJSON.decode(T.self, try cells.borrowedBytes(1))
            }
        }
    }
}
