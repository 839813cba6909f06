import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// `/markers/{id}/details`: read, upsert, delete, and calculate from the points now.
struct MarkerDetailsController {
    let services: APIServices

    func addRoutes(to group: RouterGroup<RoboscopeRequestContext>) {
        group.get("markers/:id/details", use: show)
        group.put("markers/:id/details", use: put)
        group.delete("markers/:id/details", use: delete)
        group.post("markers/:id/details/calculate", use: calculate)
    }

    func show(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let id = try input(request, context).pathID()
        try await services.gate.require(
            .read, on: StreamRef(.marker, id), context, otherwise: DomainError.notFound("marker", id))
        let snapshot = try await services.reads.markerSnapshot(id)
        guard let marker = snapshot.value else { throw DomainError.notFound("marker", id) }
        guard let details = marker.details else { throw DomainError(.notFound, "marker \(id) has no details") }
        return Listing.joined(JSONResponse.make(details), snapshot)
    }

    func put(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let body = try await input.fields()
        try await services.gate.require(
            .write, on: StreamRef(.marker, id), context, otherwise: DomainError.notFound("marker", id))
        return try await WriteRetry.run(
            store: services.store, context: context, clientVersion: nil,
            reading: { try ReadModels.requiredMarker(id, on: $0) }
        ) { current, session in
            let (details, batch) = try MarkerDetailsCommands.put(
                current, session: session, body, RequestIdentity.commandContext(request, context))
            return (JSONResponse.answer(details, status: current.details != nil ? .ok : .created), batch)
        }
    }

    func delete(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let id = try input(request, context).pathID()
        try await services.gate.require(
            .write, on: StreamRef(.marker, id), context, otherwise: DomainError.notFound("marker", id))
        return try await WriteRetry.run(
            store: services.store, context: context, clientVersion: nil,
            reading: { try ReadModels.requiredMarker(id, on: $0) }
        ) { current, session in
            return (
                JSONResponse.noContentAnswer,
                try MarkerDetailsCommands.delete(
                    current, session: session, RequestIdentity.commandContext(request, context))
            )
        }
    }

    func calculate(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let id = try input(request, context).pathID()
        try await services.gate.require(
            .write, on: StreamRef(.marker, id), context, otherwise: DomainError.notFound("marker", id))
        return try await WriteRetry.run(
            store: services.store, context: context, clientVersion: nil,
            reading: { try ReadModels.requiredMarker(id, on: $0) }
        ) { current, session in
            let (details, batch) = MarkerDetailsCommands.calculate(
                current, session: session, RequestIdentity.commandContext(request, context))
            return (JSONResponse.answer(details), batch)
        }
    }

    private func input(_ request: Request, _ context: RoboscopeRequestContext) -> RequestInput {
        RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
    }
}
