import RoboscopeDomain
import RoboscopePostgres

/// Reads of an entity a route names in its path: absent is a 404.
extension ReadModels {
    func requiredWorkSession(_ id: EntityID) async throws -> WorkSession {
        guard let session = try await workSession(id) else { throw DomainError.notFound("work session", id) }
        return session
    }

    static func requiredSpace(_ id: EntityID, on connection: PGConnection) throws -> Space {
        guard let space = try space(id, on: connection) else { throw DomainError.notFound("space", id) }
        return space
    }

    static func requiredWorkSession(_ id: EntityID, on connection: PGConnection) throws -> WorkSession {
        guard let session = try workSession(id, on: connection) else { throw DomainError.notFound("work session", id) }
        return session
    }

    static func requiredMarker(
        _ id: EntityID, on connection: PGConnection
    ) throws -> (MarkerWithDetails, WorkSessionPlace) {
        guard let found = try markerInPlace(id, on: connection) else { throw DomainError.notFound("marker", id) }
        return found
    }
}
