import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// `/spaces`: list, read, create, patch, delete (cascading to work sessions and markers).
struct SpacesController {
    let services: APIServices
    private var route: EntityRoute { EntityRoute(services: services, kind: .space) }

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
        try await route.show(
            input(request, context), context, asOf: services.timeTravel.space, now: services.reads.spaceSnapshot)
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
        let (id, body, expected) = try await route.update(input(request, context), .admin, context)
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
        let (id, expected) = try await route.delete(input(request, context), .admin, context)
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
