import Hummingbird
import RoboscopeDomain

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
        guard let details = try await services.reads.requiredMarker(id).0.details else {
            throw DomainError(.notFound, "marker \(id) has no details")
        }
        return JSONResponse.make(details)
    }

    func put(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = input(request, context)
        let id = try input.pathID()
        let body = try await input.fields()
        var existed = false
        let details = try await WriteRetry.run(store: services.store, clientVersion: nil) {
            let (current, session) = try await services.reads.requiredMarker(id)
            existed = current.details != nil
            return try MarkerDetailsCommands.put(current, session: session, body, RequestIdentity.commandContext(request, context))
        }
        return JSONResponse.make(details, status: existed ? .ok : .created)
    }

    func delete(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let id = try input(request, context).pathID()
        try await WriteRetry.run(store: services.store, clientVersion: nil) {
            let (current, session) = try await services.reads.requiredMarker(id)
            return ((), try MarkerDetailsCommands.delete(current, session: session, RequestIdentity.commandContext(request, context)))
        }
        return JSONResponse.noContent()
    }

    func calculate(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let id = try input(request, context).pathID()
        let details = try await WriteRetry.run(store: services.store, clientVersion: nil) {
            let (current, session) = try await services.reads.requiredMarker(id)
            return MarkerDetailsCommands.calculate(current, session: session, RequestIdentity.commandContext(request, context))
        }
        return JSONResponse.make(details)
    }

    private func input(_ request: Request, _ context: RoboscopeRequestContext) -> RequestInput {
        RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
    }
}
