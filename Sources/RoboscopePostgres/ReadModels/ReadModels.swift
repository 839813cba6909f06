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
        try await query { try Self.space(id, on: $0) }
    }

    /// The space and the head of its topic, in one snapshot.
    public func spaceSnapshot(_ id: EntityID) async throws -> Snapshot<Space?> {
        try await snapshot { connection in
            (try Self.space(id, on: connection), Topic(.space, id))
        }
    }

    public static func space(_ id: EntityID, on connection: PGConnection) throws -> Space? {
        try rows(Space.self, "SELECT to_jsonb(s) FROM spaces s WHERE id = $1", [id], on: connection).first
    }

    public func spaces(
        key: String?, includeInactive: Bool, page: Page = .all, visible: Visibility
    ) async throws -> [Space] {
        try await query { connection in
            let after = try Self.createdAt(of: page.after, .space, visible: visible, on: connection)
            return try Self.rows(
                Space.self,
                """
                SELECT to_jsonb(s) FROM spaces s
                WHERE s.tenant = $6 AND ($7::uuid[] IS NULL OR s.id = ANY($7::uuid[]))
                  AND ($1::text IS NULL OR key = $1) AND ($2::boolean OR active)
                  AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4::uuid))
                ORDER BY created_at, id LIMIT $5
                """,
                [key, includeInactive, after, page.after, page.limit] + visible.parameters,
                on: connection
            )
        }
    }

    // MARK: Work sessions

    public func workSession(_ id: EntityID) async throws -> WorkSession? {
        try await query { try Self.workSession(id, on: $0) }
    }

    /// The work session and the head of its topic, in one snapshot.
    public func workSessionSnapshot(_ id: EntityID) async throws -> Snapshot<WorkSession?> {
        try await snapshot { connection in
            (try Self.workSession(id, on: connection), Topic(.workSession, id))
        }
    }

    public static func workSession(_ id: EntityID, on connection: PGConnection) throws -> WorkSession? {
        try rows(
            WorkSession.self, "SELECT to_jsonb(w) FROM work_sessions w WHERE id = $1", [id], prepared: true,
            on: connection
        ).first
    }

    /// The sessions of every space `visible` shows.
    public func workSessions(
        status: WorkSession.Status?, sessionType: WorkSession.SessionType?, page: Page = .all, visible: Visibility
    ) async throws -> [WorkSession] {
        try await query { connection in
            try Self.workSessions(
                spaceID: nil, status: status, sessionType: sessionType, page: page, visible: visible, on: connection)
        }
    }

    /// A space's work sessions and the head of the space's topic, in one snapshot.
    public func workSessionsSnapshot(
        spaceID: EntityID, status: WorkSession.Status?, sessionType: WorkSession.SessionType?, page: Page = .all,
        visible: Visibility
    ) async throws -> Snapshot<[WorkSession]> {
        try await snapshot { connection in
            (
                try Self.workSessions(
                    spaceID: spaceID, status: status, sessionType: sessionType, page: page, visible: visible,
                    on: connection),
                Topic(.space, spaceID)
            )
        }
    }

    static func workSessions(
        spaceID: EntityID?, status: WorkSession.Status?, sessionType: WorkSession.SessionType?, page: Page,
        visible: Visibility?, on connection: PGConnection
    ) throws -> [WorkSession] {
        let after = try createdAt(of: page.after, .workSession, visible: visible, on: connection)
        return try rows(
            WorkSession.self,
            """
            SELECT to_jsonb(w) FROM work_sessions w
            WHERE ($1::uuid IS NULL OR space_id = $1) AND ($2::text IS NULL OR status = $2)
              AND ($3::text IS NULL OR session_type = $3)
              AND ($4::timestamptz IS NULL OR (created_at, id) > ($4::timestamptz, $5::uuid))
              AND \(visible?.condition(spaceColumn: "w.space_id", first: 7) ?? "true")
            ORDER BY created_at, id LIMIT $6
            """,
            [spaceID, status?.rawValue, sessionType?.rawValue, after, page.after, page.limit]
                + (visible?.parameters ?? []),
            on: connection
        )
    }

    // MARK: Markers

    public func marker(_ id: EntityID) async throws -> MarkerWithDetails? {
        try await query { try Self.markerRows("WHERE m.id = $1", [id], on: $0).first }
    }

    /// The marker and the head of its work session's topic, in one snapshot.
    public func markerSnapshot(_ id: EntityID) async throws -> Snapshot<MarkerWithDetails?> {
        try await snapshot { connection in
            let marker = try Self.markerRows("WHERE m.id = $1", [id], on: connection).first
            return (marker, marker.map { Topic(.workSession, $0.marker.workSessionID) })
        }
    }

    public func markers(workSessionID: EntityID) async throws -> [MarkerWithDetails] {
        try await query { try Self.markers(MarkerFilter(scope: .workSession(workSessionID)), on: $0) }
    }

    public func markers(_ filter: MarkerFilter) async throws -> [MarkerWithDetails] {
        try await query { try Self.markers(filter, on: $0) }
    }

    /// A work session's markers and the head of its topic, in one snapshot. A space's
    /// markers belong to no one topic: one statement, no transaction around it.
    public func markersSnapshot(_ filter: MarkerFilter) async throws -> Snapshot<[MarkerWithDetails]> {
        guard case .workSession(let id) = filter.scope else {
            return Snapshot(value: try await markers(filter), topic: nil, head: .empty)
        }
        return try await snapshot { connection in (try Self.markers(filter, on: connection), Topic(.workSession, id)) }
    }

    static func markers(_ filter: MarkerFilter, on connection: PGConnection) throws -> [MarkerWithDetails] {
        let (condition, parameters) = try markerStatement(filter, on: connection)
        return try markerRows(condition, parameters, on: connection)
    }

    /// The plan Postgres picks for a marker list (tests show `near` and `bbox` use the
    /// place index).
    public static func explainMarkers(_ filter: MarkerFilter, on connection: PGConnection) throws -> String {
        let (condition, parameters) = try markerStatement(filter, on: connection)
        let result = try connection.query("EXPLAIN " + MarkerRows.select + " " + condition, parameters)
        return (0..<result.rowCount).compactMap { result.string($0, 0) }.joined(separator: "\n")
    }

    /// What follows the marker columns' SELECT for `filter`, and its parameters.
    static func markerStatement(_ filter: MarkerFilter, on connection: PGConnection) throws -> (String, PostgresBinds) {
        var conditions: [String] = []
        var parameters: PostgresBinds = []
        func parameter(_ value: (any PostgresBindable)?) -> String {
            parameters.append(value)
            return "$\(parameters.count)"
        }
        switch filter.scope {
        case .workSession(let id):
            let session = parameter(id)
            conditions.append("m.work_session_id = \(session)::uuid")
            // The place index leads with the space.
            if filter.place != nil {
                conditions.append("m.space_id = (SELECT w.space_id FROM work_sessions w WHERE w.id = \(session)::uuid)")
            }
        case .space(let id):
            conditions.append("m.space_id = \(parameter(id))::uuid")
        }
        var order = "m.created_at, m.id"
        switch filter.place {
        case .near(let x, let z, let range)?:
            let centre = "point(\(parameter(x))::float8, \(parameter(z))::float8)"
            conditions.append("m.center <@ circle(\(centre), \(parameter(range))::float8)")
            order = "m.center <-> \(centre)"
        case .box(let minX, let minZ, let maxX, let maxZ)?:
            conditions.append(
                """
                m.center <@ box(point(\(parameter(minX))::float8, \(parameter(minZ))::float8),
                                point(\(parameter(maxX))::float8, \(parameter(maxZ))::float8))
                """)
        case nil:
            break
        }
        if let after = filter.page.after,
            let createdAt = try createdAt(of: after, .marker, visible: filter.visible, on: connection)
        {
            conditions.append(
                "(m.created_at, m.id) > (\(parameter(createdAt))::timestamptz, \(parameter(after))::uuid)")
        }
        let filtered =
            "WHERE " + conditions.joined(separator: " AND ")
            + " ORDER BY \(order) LIMIT \(parameter(filter.page.limit))"
        // A box on the floor plan is sorted, every match first (no index gives its order:
        // a work session's list comes from its index, and `near` from the place index's
        // nearest-first walk, both stopping at the limit). So a box chooses its page by the
        // keys and the row address (`ctid`) alone, then fetches and renders only the page's
        // rows by address, in the statement's one snapshot. Sorting every match with its
        // rendered columns and details took a box of 30,000 markers 470-520 ms for a page
        // of 10,000 through the API, 290-300 ms so (benchmarks/analysis.md). A space's list
        // without a box was measured no faster this way (328 against 359 ms), and is left.
        guard case .box? = filter.place else { return (filtered, parameters) }
        return (
            "JOIN (SELECT m.ctid AS row FROM markers m \(filtered)) AS page ON m.ctid = page.row ORDER BY \(order)",
            parameters
        )
    }

    // MARK: What writes decide on

    // On a connection the caller holds: a write reads, decides and appends in one pool
    // job (`EventStore.append(after:_:claim:)`).

    /// A marker and its work session's place, for writes to it: one row.
    public static func markerInPlace(
        _ id: EntityID, on connection: PGConnection
    ) throws -> (MarkerWithDetails, WorkSessionPlace)? {
        let result = try connection.query(prepared: MarkerRows.selectWithSpace + " WHERE m.id = $1", [id])
        guard let marker = try MarkerRows.decode(result).first, let place = try MarkerRows.places(result).first else {
            return nil
        }
        return (marker, place)
    }

    /// A work session with its markers: what deleting it must remove.
    public static func contents(ofSession id: EntityID, on connection: PGConnection) throws -> SessionContents? {
        guard let session = try workSession(id, on: connection) else { return nil }
        return SessionContents(
            session: session, markers: try markers(MarkerFilter(scope: .workSession(id)), on: connection))
    }

    /// Every work session of a space with its markers.
    public static func contents(ofSpace id: EntityID, on connection: PGConnection) throws -> [SessionContents] {
        try workSessions(spaceID: id, status: nil, sessionType: nil, page: .all, visible: nil, on: connection).map {
            session in
            SessionContents(
                session: session, markers: try markers(MarkerFilter(scope: .workSession(session.id)), on: connection))
        }
    }

    // MARK: Plumbing

    /// The creation time of an entity for keyset paging, from its stream's first event:
    /// it is found even when the entity has been deleted since the page was read.
    /// Where a page starts: the creation time of the list's item `id`, which must be one
    /// `visible` shows (else it is as unknown as an id never created).
    static func createdAt(
        of id: EntityID?, _ stream: StreamType, visible: Visibility?, on connection: PGConnection
    ) throws -> String? {
        guard let id else { return nil }
        let result = try connection.query(
            """
            SELECT e.data->>'created_at' FROM eventlog.events e
            WHERE e.stream_type = $1 AND e.stream_id = $2::uuid AND e.stream_version = 1
              AND \(visible?.condition(spaceColumn: "e.space_id", first: 3) ?? "true")
            """,
            [stream, id] + (visible?.parameters ?? [])
        )
        guard result.rowCount == 1 else {
            throw DomainError(
                .malformedRequest,
                "query after: no \(stream.spokenName) \(id) was ever created",
                field: "after")
        }
        return try RowReader(result, row: 0, source: "eventlog.events").text(0)
    }

    /// Reads and the head of the topic they reflect, in one repeatable-read snapshot: the
    /// topic's events after the head's position are exactly those the read does not reflect.
    private func snapshot<T: Sendable>(
        _ body: @escaping @Sendable (PGConnection) throws -> (T, Topic?)
    ) async throws -> Snapshot<T> {
        try await query { connection in
            try connection.transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
                let (value, topic) = try body(connection)
                let head = try topic.flatMap { try DeliveryReader.head(of: $0, on: connection) } ?? .empty
                return Snapshot(value: value, topic: topic, head: head)
            }
        }
    }

    /// Prepared: the conditions are a handful of fixed texts (by id, by scope, place and
    /// page), and parsing and planning the wide select cost more than running it.
    static func markerRows(
        _ condition: String, _ parameters: PostgresBinds, on connection: PGConnection
    ) throws -> [MarkerWithDetails] {
        try MarkerRows.decode(try connection.query(prepared: MarkerRows.select + " " + condition, parameters))
    }

    static func rows<T: Decodable & Sendable>(
        _ type: T.Type, _ sql: String, _ parameters: PostgresBinds, prepared: Bool = false, on connection: PGConnection
    ) throws -> [T] {
        let result = try prepared ? connection.query(prepared: sql, parameters) : connection.query(sql, parameters)
        return try (0..<result.rowCount).map { row in
            try StorageJSON.decode(T.self, try RowReader(result, row: row, source: "\(T.self) rows").borrowedBytes(0))
        }
    }

    private func query<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        try await pool.translatingErrors(body)
    }
}

/// A read with the head of the topic it belongs to (`Roboscope-Position`,
/// `Roboscope-Topic-Seq`).
public struct Snapshot<Value: Sendable>: Sendable {
    public var value: Value
    /// Nil when the read belongs to no topic (a marker that does not exist).
    public var topic: Topic?
    public var head: TopicHead
}

/// Keyset paging: up to `limit` items after the item `after`.
public struct Page: Hashable, Sendable {
    public static let maxLimit = 10_000
    /// What a list returns without `limit`.
    public static let first = Page(limit: maxLimit, after: nil)
    /// Everything, for the service's own reads (a cascade must see every child).
    public static let all = Page(limit: Int(Int32.max), after: nil)

    public var limit: Int
    public var after: EntityID?

    public init(limit: Int, after: EntityID?) {
        self.limit = limit
        self.after = after
    }
}

/// Which markers a list returns.
public struct MarkerFilter: Hashable, Sendable {
    public enum Scope: Hashable, Sendable {
        case workSession(EntityID)
        /// The markers of every work session of the space.
        case space(EntityID)
    }

    /// Narrowing by the marker's centre on the floor plan (x = cross, z = long).
    public enum Place: Hashable, Sendable {
        /// Within `range` metres of (x, z), nearest first.
        case near(x: Double, z: Double, range: Double)
        case box(minX: Double, minZ: Double, maxX: Double, maxZ: Double)
    }

    public var scope: Scope
    public var place: Place?
    public var page: Page
    /// Whose items `page.after` may name (nil: any, for the service's own reads).
    public var visible: Visibility?

    public init(scope: Scope, place: Place? = nil, page: Page = .all, visible: Visibility? = nil) {
        self.scope = scope
        self.place = place
        self.page = page
        self.visible = visible
    }
}
