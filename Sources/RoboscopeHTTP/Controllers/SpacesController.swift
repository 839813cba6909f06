import Hummingbird
import RoboscopeDomain

/// `/spaces`: list, read, create, patch, delete (cascading to work sessions and markers).
struct SpacesController {
    let services: APIServices

    func addRoutes(to group: RouterGroup<RoboscopeRequestContext>) {
        group.get("spaces", use: list)
        group.get("spaces/:id", use: show)
        group.post("spaces", use: create)
        group.patch("spaces/:id", use: update)
        group.delete("spaces/:id", use: delete)
    }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let key = input.query("key")
        let includeInactive = try input.queryBool("include_inactive") ?? false
        return JSONResponse.make(try await services.reads.spaces(key: key, includeInactive: includeInactive))
    }

    func show(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        if let moment = try input.asOf() {
            return JSONResponse.make(try await services.timeTravel.space(try input.pathID(), asOf: moment))
        }
        return JSONResponse.make(try await services.reads.requiredSpace(input.pathID()))
    }

    func create(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let body = try await input(request, context).fields()
        let (space, batch) = try SpaceCommands.create(body, RequestIdentity.commandContext(request, context))
        try await services.store.append(batch)
        return JSONResponse.make(space, status: .created)
    }

    func update(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let body = try await input.fields()
        let expected = try input.expectedVersion(body)
        let space = try await WriteRetry.run(store: services.store, clientVersion: expected) {
            try SpaceCommands.update(
                try await services.reads.requiredSpace(id), body, expectedVersion: expected, RequestIdentity.commandContext(request, context)
            )
        }
        return JSONResponse.make(space)
    }

    func delete(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let expected = try input.expectedVersion(nil)
        try await WriteRetry.run(store: services.store, clientVersion: expected) {
            let space = try await services.reads.requiredSpace(id)
            let sessions = try await services.reads.contents(ofSpace: id)
            let batch = try SpaceCommands.delete(
                space, expectedVersion: expected, sessions: sessions, RequestIdentity.commandContext(request, context)
            )
            return ((), batch)
        }
        return JSONResponse.noContent()
    }

    private func input(_ request: Request, _ context: RoboscopeRequestContext) -> RequestInput {
        RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
    }
}
