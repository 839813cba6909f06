import Hummingbird
import RoboscopeDomain

/// `/work-sessions`: list with filters, read, create, patch, delete (cascading to markers).
struct WorkSessionsController {
    let services: APIServices

    func addRoutes(to group: RouterGroup<RoboscopeRequestContext>) {
        group.get("work-sessions", use: list)
        group.get("work-sessions/:id", use: show)
        group.post("work-sessions", use: create)
        group.patch("work-sessions/:id", use: update)
        group.delete("work-sessions/:id", use: delete)
    }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let sessions = try await services.reads.workSessions(
            spaceID: try input.queryID("space_id"),
            status: try input.queryEnum("status", WorkSession.Status.self),
            sessionType: try input.queryEnum("session_type", WorkSession.SessionType.self)
        )
        return JSONResponse.make(sessions)
    }

    func show(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        if let moment = try input.asOf() {
            return JSONResponse.make(try await services.timeTravel.workSession(try input.pathID(), asOf: moment))
        }
        return JSONResponse.make(try await services.reads.requiredWorkSession(input.pathID()))
    }

    func create(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let body = try await input(request, context).fields()
        let spaceID = try body.requiredID("space_id")
        guard let space = try await services.reads.space(spaceID) else {
            throw DomainError(.invalidField, "space_id: space \(spaceID) does not exist", field: "space_id")
        }
        let (session, batch) = try WorkSessionCommands.create(body, space: space, RequestIdentity.commandContext(request, context))
        try await services.store.append(batch)
        return JSONResponse.make(session, status: .created)
    }

    func update(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let body = try await input.fields()
        let expected = try input.expectedVersion(body)
        let session = try await WriteRetry.run(store: services.store, clientVersion: expected) {
            try WorkSessionCommands.update(
                try await services.reads.requiredWorkSession(id), body, expectedVersion: expected, RequestIdentity.commandContext(request, context)
            )
        }
        return JSONResponse.make(session)
    }

    func delete(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let expected = try input.expectedVersion(nil)
        try await WriteRetry.run(store: services.store, clientVersion: expected) {
            guard let contents = try await services.reads.contents(ofSession: id) else {
                throw DomainError.notFound("work session", id)
            }
            let batch = try WorkSessionCommands.delete(contents, expectedVersion: expected, RequestIdentity.commandContext(request, context))
            return ((), batch)
        }
        return JSONResponse.noContent()
    }

    private func input(_ request: Request, _ context: RoboscopeRequestContext) -> RequestInput {
        RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
    }
}
