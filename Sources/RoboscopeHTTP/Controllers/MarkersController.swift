import Hummingbird
import RoboscopeDomain

/// `/markers`: every marker returned carries its `details`.
struct MarkersController {
    let services: APIServices

    func addRoutes(to group: RouterGroup<RoboscopeRequestContext>) {
        group.get("markers", use: list)
        group.get("markers/:id", use: show)
        group.post("markers", use: create)
        group.post("markers/bulk", use: bulkCreate)
        group.patch("markers/:id", use: update)
        group.delete("markers/:id", use: delete)
    }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        guard let sessionID = try input.queryID("work_session_id") else {
            throw DomainError(.malformedRequest, "query work_session_id: required", field: "work_session_id")
        }
        if let moment = try input.asOf() {
            return JSONResponse.make(try await services.timeTravel.markers(workSessionID: sessionID, asOf: moment))
        }
        return JSONResponse.make(try await services.reads.markers(workSessionID: sessionID))
    }

    func show(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        if let moment = try input.asOf() {
            return JSONResponse.make(try await services.timeTravel.marker(try input.pathID(), asOf: moment))
        }
        return JSONResponse.make(try await services.reads.requiredMarker(input.pathID()).0)
    }

    func create(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let body = try await input(request, context).fields()
        let session = try await session(try body.requiredID("work_session_id"))
        let (marker, batch) = try MarkerCommands.create(body, session: session, RequestIdentity.commandContext(request, context))
        try await services.store.append(batch)
        return JSONResponse.make(marker, status: .created)
    }

    func bulkCreate(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let body = try await input(request, context).fields()
        guard case .array(let items)? = body.object["markers"] else {
            throw DomainError.invalid("markers", "expected an array of markers")
        }
        guard items.count <= Limits.bulkMarkers else {
            throw DomainError.invalid("markers", "at most \(Limits.bulkMarkers) markers in one request")
        }
        guard !items.isEmpty else { return JSONResponse.make([MarkerWithDetails](), status: .created) }
        guard let first = items.first?.objectValue, let sessionID = try FieldReader(first).id("work_session_id") else {
            throw DomainError.invalid("markers[0].work_session_id", "is required")
        }
        let session = try await session(sessionID, field: "markers[0].work_session_id")
        let (markers, batch) = try MarkerCommands.bulkCreate(items, session: session, RequestIdentity.commandContext(request, context))
        try await services.store.append(batch)
        return JSONResponse.make(markers, status: .created)
    }

    func update(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let body = try await input.fields()
        let expected = try input.expectedVersion(body)
        let marker = try await WriteRetry.run(store: services.store, clientVersion: expected) {
            let (current, session) = try await services.reads.requiredMarker(id)
            return try MarkerCommands.update(
                current, session: session, body, expectedVersion: expected, RequestIdentity.commandContext(request, context)
            )
        }
        return JSONResponse.make(marker)
    }

    func delete(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let expected = try input.expectedVersion(nil)
        try await WriteRetry.run(store: services.store, clientVersion: expected) {
            let (current, session) = try await services.reads.requiredMarker(id)
            let batch = try MarkerCommands.delete(current, session: session, expectedVersion: expected, RequestIdentity.commandContext(request, context))
            return ((), batch)
        }
        return JSONResponse.noContent()
    }

    private func session(_ id: EntityID, field: String = "work_session_id") async throws -> WorkSession {
        guard let session = try await services.reads.workSession(id) else {
            throw DomainError(.invalidField, "\(field): work session \(id) does not exist", field: field)
        }
        return session
    }

    private func input(_ request: Request, _ context: RoboscopeRequestContext) -> RequestInput {
        RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
    }
}
