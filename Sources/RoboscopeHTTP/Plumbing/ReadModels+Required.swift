import RoboscopeDomain
import RoboscopePostgres

/// Reads of an entity a route names in its path: absent is a 404.
extension ReadModels {
    func requiredSpace(_ id: EntityID) async throws -> Space {
        guard let space = try await space(id) else { throw DomainError.notFound("space", id) }
        return space
    }

    func requiredWorkSession(_ id: EntityID) async throws -> WorkSession {
        guard let session = try await workSession(id) else { throw DomainError.notFound("work session", id) }
        return session
    }

    func requiredMarker(_ id: EntityID) async throws -> (MarkerWithDetails, WorkSessionPlace) {
        guard let found = try await markerInPlace(id) else { throw DomainError.notFound("marker", id) }
        return found
    }
}
