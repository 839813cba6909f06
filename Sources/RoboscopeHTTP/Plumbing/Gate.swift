import RoboscopeDomain
import RoboscopePostgres

/// The one authorization check every route goes through (docs/security.md): an entity
/// the principal may not see answers exactly as an unknown id (`unknown`, the route's
/// own not-found), then a scope it lacks is a 403 naming the scope.
struct Gate: Sendable {
    let places: Places

    /// An operation on no particular entity (a create of a space, a list).
    func require(_ scope: Scope, _ context: RoboscopeRequestContext) throws {
        try context.principal.require(scope)
    }

    /// An operation on the entity of `stream`; returns its place.
    @discardableResult
    func require(
        _ scope: Scope, on stream: StreamRef, _ context: RoboscopeRequestContext,
        otherwise unknown: @autoclosure () -> DomainError
    ) async throws -> Place {
        let place = try await places.place(of: stream)
        try context.principal.require(scope, in: place, otherwise: unknown())
        return place!
    }

    /// An operation on a topic (the changes feed, integrity).
    func require(
        _ scope: Scope, on topic: Topic, _ context: RoboscopeRequestContext,
        otherwise unknown: @autoclosure () -> DomainError
    ) async throws {
        try await require(scope, on: Places.stream(of: topic), context, otherwise: unknown())
    }

    /// Whether the principal sees the entity of `stream` (lists filtered by a parent).
    func sees(_ stream: StreamRef, _ context: RoboscopeRequestContext) async throws -> Bool {
        guard let place = try await places.place(of: stream) else { return false }
        return context.principal.sees(place)
    }
}
