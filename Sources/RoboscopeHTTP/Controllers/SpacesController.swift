import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

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
        let page = try Listing.page(input)
        try services.gate.require(.read, context)
        let spaces = try await services.reads.spaces(
            key: key, includeInactive: includeInactive, page: Listing.probe(page),
            visible: Visibility(context.principal))
        services.budgets.charge(context, rows: spaces.count)
        return Listing.response(spaces, page: page, request: request, id: \.id)
    }

    func show(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        if let moment = try input.asOf() {
            try await services.gate.require(
                .audit, on: StreamRef(.space, id), context, otherwise: DomainError.notFound("space", id))
            return JSONResponse.make(try await services.timeTravel.space(id, asOf: moment))
        }
        try await services.gate.require(
            .read, on: StreamRef(.space, id), context, otherwise: DomainError.notFound("space", id))
        let snapshot = try await services.reads.spaceSnapshot(id)
        guard let space = snapshot.value else { throw DomainError.notFound("space", id) }
        return Listing.joined(JSONResponse.make(space), snapshot)
    }

    func create(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let body = try await input(request, context).fields()
        try services.gate.require(.admin, context)
        return try await WriteRetry.once(store: services.store, context: context) {
            let (space, batch) = try SpaceCommands.create(body, RequestIdentity.commandContext(request, context))
            return (JSONResponse.answer(space, status: .created), batch)
        }
    }

    func update(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let body = try await input.fields()
        let expected = try input.expectedVersion(body)
        try await services.gate.require(
            .admin, on: StreamRef(.space, id), context, otherwise: DomainError.notFound("space", id))
        return try await WriteRetry.run(
            store: services.store, context: context, clientVersion: expected,
            reading: { try ReadModels.requiredSpace(id, on: $0) }
        ) { current in
            let (space, batch) = try SpaceCommands.update(
                current, body, expectedVersion: expected, RequestIdentity.commandContext(request, context)
            )
            return (JSONResponse.answer(space), batch)
        }
    }

    func delete(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let expected = try input.expectedVersion(nil)
        try await services.gate.require(
            .admin, on: StreamRef(.space, id), context, otherwise: DomainError.notFound("space", id))
        return try await WriteRetry.run(
            store: services.store, context: context, clientVersion: expected,
            reading: { (try ReadModels.requiredSpace(id, on: $0), try ReadModels.contents(ofSpace: id, on: $0)) }
        ) { space, sessions in
            let batch = try SpaceCommands.delete(
                space, expectedVersion: expected, sessions: sessions, RequestIdentity.commandContext(request, context)
            )
            return (JSONResponse.noContentAnswer, batch)
        }
    }

    private func input(_ request: Request, _ context: RoboscopeRequestContext) -> RequestInput {
        RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
    }
}
