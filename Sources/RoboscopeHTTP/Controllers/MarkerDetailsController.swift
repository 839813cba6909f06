import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// `/markers/{id}/details`: read, upsert, delete, and calculate from the points now.
struct MarkerDetailsController {
    let services: APIServices

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
        let received = input(request, context)
        let id = try received.pathID()
        let body = try await received.fields()
        return try await changeDetails(of: id, request, context) { current, session, command in
            let (details, batch) = try MarkerDetailsCommands.put(current, session: session, body, command)
            return (JSONResponse.answer(details, status: current.details != nil ? .ok : .created), batch)
        }
    }

    func delete(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try await changeDetails(of: try input(request, context).pathID(), request, context) {
            current, session, command in
            (JSONResponse.noContentAnswer, try MarkerDetailsCommands.delete(current, session: session, command))
        }
    }

    func calculate(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try await changeDetails(of: try input(request, context).pathID(), request, context) {
            current, session, command in
            let (details, batch) = MarkerDetailsCommands.calculate(current, session: session, command)
            return (JSONResponse.answer(details), batch)
        }
    }

    /// A change of marker `id`'s details: the caller may write the marker (else it is not
    /// found), and `decide` runs on the marker as stored, retried as every write is.
    private func changeDetails(
        of id: EntityID, _ request: Request, _ context: RoboscopeRequestContext,
        _ decide:
            @escaping @Sendable (MarkerWithDetails, WorkSessionPlace, CommandContext) throws -> (
                StoredAnswer, AppendBatch
            )
    ) async throws -> Response {
        try await services.gate.require(
            .write, on: StreamRef(.marker, id), context, otherwise: DomainError.notFound("marker", id))
        return try await WriteRetry.run(
            store: services.store, context: context, clientVersion: nil,
            reading: { try ReadModels.requiredMarker(id, on: $0) }
        ) { current, session in
            // Made at each decision: a retried one is made at its own time.
            try decide(current, session, RequestIdentity.commandContext(request, context))
        }
    }

    private func input(_ request: Request, _ context: RoboscopeRequestContext) -> RequestInput {
        RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
    }
}
