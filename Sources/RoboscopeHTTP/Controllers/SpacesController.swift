import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// `/spaces`: list, read, create, patch, delete (cascading to work sessions and markers).
struct SpacesController {
    let services: APIServices
    private var route: EntityRoute { EntityRoute(services: services, kind: .space) }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = route.input(request, context)
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
            route.input(request, context), context, asOf: services.timeTravel.space, now: services.reads.spaceSnapshot)
    }

    func create(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let body = try await route.input(request, context).fields()
        try services.gate.require(.admin, context)
        return try await WriteRetry.once(store: services.store, context: context) {
            let (space, batch) = try SpaceCommands.create(body, RequestIdentity.commandContext(request, context))
            return (JSONResponse.answer(space, status: .created), batch)
        }
    }

    func update(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try await route.patch(request, context, .admin, reading: ReadModels.requiredSpace) {
            try SpaceCommands.update($0, $1, expectedVersion: $2, $3)
        }
    }

    func delete(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try await route.delete(
            request, context, .admin,
            reading: { (try ReadModels.requiredSpace($0, on: $1), try ReadModels.contents(ofSpace: $0, on: $1)) }
        ) { _, found, expected, command in
            try SpaceCommands.delete(found.0, expectedVersion: expected, sessions: found.1, command)
        }
    }
}
