import RoboscopeDomain
import Synchronization

/// Where each entity lives (its space, and the space's tenant): what every authorization
/// check compares with the principal.
///
/// A place is read from the entity's first event (which names its space, deleted
/// entities included) and the space's tenant (`space_tenants`), and kept: a place never
/// changes once the entity exists, so a cached one is never stale. An entity that does
/// not exist (yet) is not cached. Bounded: when `capacity` places are kept, the next one
/// read starts the set afresh.
public final class Places: Sendable {
    private let known = Mutex<[StreamRef: Place]>([:])
    private let pool: PostgresPool?
    public let capacity: Int

    /// `pool` nil: lookups only on a connection the caller holds.
    public init(pool: PostgresPool?, capacity: Int = 100_000) {
        self.pool = pool
        self.capacity = capacity
    }

    /// The place of a stream's entity, or nil when it never existed.
    public func place(of stream: StreamRef) async throws -> Place? {
        let stream = Self.owning(stream)
        if let place = cached(stream) { return place }
        guard let pool else { return nil }
        let found = try await pool.translatingErrors { try Self.read(stream, on: $0) }
        if let found { remember(found, for: stream) }
        return found
    }

    /// The same, on a connection the caller holds (the gateway's tailer).
    public func place(of stream: StreamRef, on connection: PGConnection) throws -> Place? {
        let stream = Self.owning(stream)
        if let place = cached(stream) { return place }
        let found = try Self.read(stream, on: connection)
        if let found { remember(found, for: stream) }
        return found
    }

    public func place(of topic: Topic, on connection: PGConnection) throws -> Place? {
        try place(of: Self.stream(of: topic), on: connection)
    }

    public static func stream(of topic: Topic) -> StreamRef {
        StreamRef(topic.kind == .space ? .space : .workSession, topic.id)
    }

    /// The place if it is known without a query.
    public func cached(_ stream: StreamRef) -> Place? {
        let stream = Self.owning(stream)
        return known.withLock { $0[stream] }
    }

    private func remember(_ place: Place, for stream: StreamRef) {
        known.withLock { places in
            if places.count >= capacity { places.removeAll(keepingCapacity: true) }
            places[stream] = place
        }
    }

    /// A lock stream lives where its work session does; details where their marker does.
    private static func owning(_ stream: StreamRef) -> StreamRef {
        switch stream.type {
        case .workSessionLock: StreamRef(.workSession, stream.id)
        case .markerDetails: StreamRef(.marker, stream.id)
        default: stream
        }
    }

    static func read(_ stream: StreamRef, on connection: PGConnection) throws -> Place? {
        let result = try connection.query(
            prepared: """
                SELECT t.space_id, t.tenant FROM eventlog.events e JOIN space_tenants t ON t.space_id = e.space_id
                WHERE e.stream_type = $1 AND e.stream_id = $2::uuid AND e.stream_version = 1
                """,
            [stream.type, stream.id]
        )
        guard result.rowCount == 1 else { return nil }
        let row = RowReader(result, row: 0, source: "places")
        return Place(spaceID: try row.id(0), tenant: try row.text(1))
    }
}
