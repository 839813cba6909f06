import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// `/work-sessions`: list with filters, read, create, patch, delete (cascading to markers).
struct WorkSessionsController {
    let services: APIServices
    private var route: EntityRoute { EntityRoute(services: services, kind: .workSession) }

    func addRoutes(to group: RouterGroup<RoboscopeRequestContext>) {
        group.get("work-sessions", use: list)
        group.get("work-sessions/:id", use: show)
        group.post("work-sessions", use: create)
        group.patch("work-sessions/:id", use: update)
        group.delete("work-sessions/:id", use: delete)
    }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
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
            input(request, context), context, asOf: services.timeTravel.workSession,
            now: services.reads.workSessionSnapshot)
    }

    func create(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let body = try await input(request, context).fields()
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
        let (id, body, expected) = try await route.update(input(request, context), .write, context)
        return try await WriteRetry.run(
            store: services.store, context: context, clientVersion: expected,
            reading: { try ReadModels.requiredWorkSession(id, on: $0) }
        ) { current in
            let (session, batch) = try WorkSessionCommands.update(
                current, body, expectedVersion: expected, RequestIdentity.commandContext(request, context)
            )
            return (JSONResponse.answer(session), batch)
        }
    }

    func delete(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let (id, expected) = try await route.delete(input(request, context), .write, context)
        return try await WriteRetry.run(
            store: services.store, context: context, clientVersion: expected,
            reading: { try ReadModels.contents(ofSession: id, on: $0) }
        ) { contents in
            guard let contents else { throw route.unknown(id) }
            let batch = try WorkSessionCommands.delete(
                contents, expectedVersion: expected, RequestIdentity.commandContext(request, context))
            return (JSONResponse.noContentAnswer, batch)
        }
    }

    private func input(_ request: Request, _ context: RoboscopeRequestContext) -> RequestInput {
        RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
    }
}
