import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// What the routes of one kind of entity (`/spaces/{id}`, `/work-sessions/{id}`,
/// `/markers/{id}`) share: the entity is named in the path, and one the caller may not
/// see answers exactly as an unknown one.
struct EntityRoute {
    let services: APIServices
    let kind: StreamType

    /// `404 <kind> <id> not found`.
    func unknown(_ id: EntityID) -> DomainError {
        DomainError.notFound(kind.spokenName, id)
    }

    /// `GET /<kinds>/{id}`: the entity as it is, with its topic's snapshot headers; with
    /// `as_of`, as it was then, which takes `audit`.
    func show<Value: JSONWritable>(
        _ input: RequestInput, _ context: RoboscopeRequestContext,
        asOf: (EntityID, AsOf) async throws -> Value, now: (EntityID) async throws -> Snapshot<Value?>
    ) async throws -> Response {
        let id = try input.pathID()
        if let moment = try input.asOf() {
            try await services.gate.require(.audit, on: StreamRef(kind, id), context, otherwise: unknown(id))
            return JSONResponse.make(try await asOf(id, moment))
        }
        try await services.gate.require(.read, on: StreamRef(kind, id), context, otherwise: unknown(id))
        let snapshot = try await now(id)
        guard let value = snapshot.value else { throw unknown(id) }
        return Listing.joined(JSONResponse.make(value), snapshot)
    }

    /// Where a `PATCH` of an existing entity starts: its id from the path, its body, the
    /// version the client expects (`version` in the body, or `If-Match`), and the
    /// principal's `scope` on it.
    func update(
        _ input: RequestInput, _ scope: Scope, _ context: RoboscopeRequestContext
    ) async throws -> (id: EntityID, body: FieldReader, expected: Int64?) {
        let id = try input.pathID()
        let body = try await input.fields()
        let expected = try input.expectedVersion(body)
        try await services.gate.require(scope, on: StreamRef(kind, id), context, otherwise: unknown(id))
        return (id, body, expected)
    }

    /// Where a `DELETE` of an existing entity starts: its id, the version the client
    /// expects (`If-Match`), and the principal's `scope` on it.
    func delete(
        _ input: RequestInput, _ scope: Scope, _ context: RoboscopeRequestContext
    ) async throws -> (id: EntityID, expected: Int64?) {
        let id = try input.pathID()
        let expected = try input.expectedVersion(nil)
        try await services.gate.require(scope, on: StreamRef(kind, id), context, otherwise: unknown(id))
        return (id, expected)
    }
}
