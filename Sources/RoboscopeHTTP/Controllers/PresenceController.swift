import Hummingbird
import RoboscopeDomain

/// `/presence/{work_session_id}`: heartbeats, the users present, leaving. Backed by
/// Redis alone, so it answers while Postgres is down (and 503 while Redis is).
struct PresenceController {
    let services: APIServices

    func addRoutes(to group: RouterGroup<RoboscopeRequestContext>) {
        group.post("presence/:work_session_id", use: heartbeat)
        group.get("presence/:work_session_id", use: list)
        group.delete("presence/:work_session_id/:user_id", use: leave)
    }

    static let userIDLength = 200

    func heartbeat(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let session = try input.pathID("work_session_id")
        let user = try await input.fields().requiredString("user_id", maxLength: Self.userIDLength)
        // One Redis round trip: listing (and trimming) is GET's job.
        let joined = try await services.presence.heartbeat(session: session.description, user: user)
        return JSONResponse.make(JSONValue.object(["user_id": .string(user), "joined": .bool(joined)]))
    }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let session = try input.pathID("work_session_id")
        let users = try await services.presence.users(session: session.description)
        return JSONResponse.make(JSONValue.object(["users": .array(users.map(JSONValue.string))]))
    }

    func leave(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let session = try input.pathID("work_session_id")
        let user = context.parameters.get("user_id") ?? ""
        guard !user.isEmpty, user.count <= Self.userIDLength else {
            throw DomainError.invalid("user_id", "must be 1 to \(Self.userIDLength) characters")
        }
        let left = try await services.presence.leave(session: session.description, user: user)
        return JSONResponse.make(JSONValue.object(["left": .bool(left)]))
    }
}
