import Foundation
import RoboscopeDomain

/// Queries over the current-state tables, which the append keeps up to date in the
/// same transaction, so a client reads its own writes.
public struct ReadModels: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    // MARK: Spaces

    public func space(_ id: EntityID) async throws -> Space? {
        try await rows(Space.self, "SELECT to_jsonb(s) FROM spaces s WHERE id = $1", [id.description]).first
    }

    public func spaces(key: String?, includeInactive: Bool) async throws -> [Space] {
        try await rows(
            Space.self,
            """
            SELECT to_jsonb(s) FROM spaces s
            WHERE ($1::text IS NULL OR key = $1) AND ($2::boolean OR active)
            ORDER BY created_at, id
            """,
            [key, includeInactive ? "true" : "false"]
        )
    }

    // MARK: Work sessions

    public func workSession(_ id: EntityID) async throws -> WorkSession? {
        try await rows(WorkSession.self, "SELECT to_jsonb(w) FROM work_sessions w WHERE id = $1", [id.description]).first
    }

    public func workSessions(
        spaceID: EntityID?, status: WorkSession.Status?, sessionType: WorkSession.SessionType?
    ) async throws -> [WorkSession] {
        try await rows(
            WorkSession.self,
            """
            SELECT to_jsonb(w) FROM work_sessions w
            WHERE ($1::uuid IS NULL OR space_id = $1) AND ($2::text IS NULL OR status = $2)
              AND ($3::text IS NULL OR session_type = $3)
            ORDER BY created_at, id
            """,
            [spaceID?.description, status?.rawValue, sessionType?.rawValue]
        )
    }

    // MARK: Markers

    public func marker(_ id: EntityID) async throws -> MarkerWithDetails? {
        try await markerRows("WHERE m.id = $1", [id.description]).first
    }

    public func markers(workSessionID: EntityID) async throws -> [MarkerWithDetails] {
        try await markerRows("WHERE m.work_session_id = $1 ORDER BY m.created_at, m.id", [workSessionID.description])
    }

    /// A marker and the work session it belongs to, for writes that need both.
    public func markerInSession(_ id: EntityID) async throws -> (MarkerWithDetails, WorkSession)? {
        guard let marker = try await marker(id) else { return nil }
        guard let session = try await workSession(marker.marker.workSessionID) else { return nil }
        return (marker, session)
    }

    /// A work session with its markers: what deleting it must remove.
    public func contents(ofSession id: EntityID) async throws -> SessionContents? {
        guard let session = try await workSession(id) else { return nil }
        return SessionContents(session: session, markers: try await markers(workSessionID: id))
    }

    /// Every work session of a space with its markers.
    public func contents(ofSpace id: EntityID) async throws -> [SessionContents] {
        let sessions = try await workSessions(spaceID: id, status: nil, sessionType: nil)
        var contents: [SessionContents] = []
        for session in sessions {
            contents.append(SessionContents(session: session, markers: try await markers(workSessionID: session.id)))
        }
        return contents
    }

    // MARK: Plumbing

    private func markerRows(_ condition: String, _ parameters: [String?]) async throws -> [MarkerWithDetails] {
        let sql = MarkerRows.select + " " + condition
        return try await query { connection in try MarkerRows.decode(try connection.query(sql, parameters)) }
    }

    private func rows<T: Decodable & Sendable>(_ type: T.Type, _ sql: String, _ parameters: [String?]) async throws -> [T] {
        try await query { connection in
            let result = try connection.query(sql, parameters)
            return try (0..<result.rowCount).map { row in
                try StorageJSON.decode(T.self, result.bytes(row, 0)!)
            }
        }
    }

    private func query<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await pool.translatingErrors(body)
    }
}
