import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// `/work-sessions`: list with filters, read, create, patch, delete (cascading to markers).
struct WorkSessionsController {
    let services: APIServices
    private var route: EntityRoute { EntityRoute(services: services, kind: .workSession) }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = route.input(request, context)
        let spaceID = try input.queryID("space_id")
        let status = try input.queryEnum("status", WorkSession.Status.self)
        let sessionType = try input.queryEnum("session_type", WorkSession.SessionType.self)
        let page = try Listing.page(input)
        try services.gate.require(.read, context)
        let visible = Visibility(context.principal)
        guard let spaceID else {
            let sessions = try await services.reads.workSessions(
                status: status, sessionType: sessionType, page: Listing.probe(page), visible: visible
            )
            services.budgets.charge(context, rows: sessions.count)
            return Listing.response(sessions, page: page, request: request, id: \.id)
        }
        // One space's sessions are a read of its topic. A space the principal may not see
        // is read as the unknown space it is to it: the same empty list, the same headers.
        let shown = try await services.gate.sees(StreamRef(.space, spaceID), context) ? spaceID : EntityID.random()
        let snapshot = try await services.reads.workSessionsSnapshot(
            spaceID: shown, status: status, sessionType: sessionType, page: Listing.probe(page), visible: visible
        )
        services.budgets.charge(context, rows: snapshot.value.count)
        return Listing.joined(Listing.response(snapshot.value, page: page, request: request, id: \.id), snapshot)
    }

    func show(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try await route.show(
            route.input(request, context), context, asOf: services.timeTravel.workSession,
            now: services.reads.workSessionSnapshot)
    }

    func create(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let body = try await route.input(request, context).fields()
        let spaceID = try body.requiredID("space_id")
        let unknown = DomainError(.invalidField, "space_id: space \(spaceID) does not exist", field: "space_id")
        try await services.gate.require(.write, on: StreamRef(.space, spaceID), context, otherwise: unknown)
        guard let space = try await services.reads.space(spaceID) else { throw unknown }
        return try await WriteRetry.once(store: services.store, context: context) {
            let (session, batch) = try WorkSessionCommands.create(
                body, space: space, RequestIdentity.commandContext(request, context))
            return (JSONResponse.answer(session, status: .created), batch)
        }
    }

    func update(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try await route.patch(request, context, .write, reading: ReadModels.requiredWorkSession) {
            try WorkSessionCommands.update($0, $1, expectedVersion: $2, $3)
        }
    }

    func delete(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try await route.delete(request, context, .write, reading: ReadModels.contents(ofSession:on:)) {
            id, contents, expected, command in
            guard let contents else { throw route.unknown(id) }
            return try WorkSessionCommands.delete(contents, expectedVersion: expected, command)
        }
    }
}
