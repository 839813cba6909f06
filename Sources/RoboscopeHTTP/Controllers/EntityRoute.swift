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

    /// `PATCH /<kinds>/{id}`: the id from the path, the body, the version the client
    /// expects (`version` in the body, or `If-Match`) and the principal's `scope` on the
    /// entity; then a write that `read`s it on the append's connection and lets `decide`
    /// make the change. Answers the entity as it now is.
    func patch<State: Sendable, Value: JSONWritable>(
        _ request: Request, _ context: RoboscopeRequestContext, _ scope: Scope,
        reading read: @escaping @Sendable (EntityID, PGConnection) throws -> State,
        _ decide: @escaping @Sendable (State, FieldReader, Int64?, CommandContext) throws -> (Value, AppendBatch)
    ) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let body = try await input.fields()
        let expected = try input.expectedVersion(body)
        try await services.gate.require(scope, on: StreamRef(kind, id), context, otherwise: unknown(id))
        return try await WriteRetry.run(
            store: services.store, context: context, clientVersion: expected, reading: { try read(id, $0) }
        ) { state in
            let (value, batch) = try decide(state, body, expected, RequestIdentity.commandContext(request, context))
            return (JSONResponse.answer(value), batch)
        }
    }

    /// `DELETE /<kinds>/{id}`: the id, the version the client expects (`If-Match`) and the
    /// principal's `scope` on the entity; then a write that `read`s what the delete
    /// cascades to and lets `decide` make the change. Answers 204.
    func delete<State: Sendable>(
        _ request: Request, _ context: RoboscopeRequestContext, _ scope: Scope,
        reading read: @escaping @Sendable (EntityID, PGConnection) throws -> State,
        _ decide: @escaping @Sendable (EntityID, State, Int64?, CommandContext) throws -> AppendBatch
    ) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let expected = try input.expectedVersion(nil)
        try await services.gate.require(scope, on: StreamRef(kind, id), context, otherwise: unknown(id))
        return try await WriteRetry.run(
            store: services.store, context: context, clientVersion: expected, reading: { try read(id, $0) }
        ) { state in
            (
                JSONResponse.noContentAnswer,
                try decide(id, state, expected, RequestIdentity.commandContext(request, context))
            )
        }
    }

    /// The request, its context and the service's body limit, as the handlers read them.
    func input(_ request: Request, _ context: RoboscopeRequestContext) -> RequestInput {
        RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
    }
}
