import Hummingbird
import RoboscopeDomain

/// `/presence/{work_session_id}`: heartbeats, the users present, leaving. Backed by
/// Redis alone, so it answers while Postgres is down (and 503 while Redis is).
struct PresenceController {
    let services: APIServices

    static let userIDLength = 200

    func heartbeat(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let session = try input.pathID("work_session_id")
        let body = try await input.fieldsIfAny()
        try await services.gate.require(
            .write, on: StreamRef(.workSession, session), context,
            otherwise: DomainError.notFound("work session", session))
        let user: String
        if services.authentication != nil {
            // Presence acts for the subject (rule 5): the body may leave `user_id` out.
            user = context.principal.subject
            if let named = try body.string("user_id", maxLength: Self.userIDLength), named != user {
                throw DomainError(
                    .forbidden, "user_id: a heartbeat is for the token's subject (\(user)) only", field: "user_id")
            }
        } else {
            user = try body.requiredString("user_id", maxLength: Self.userIDLength)
        }
        // One Redis round trip: listing (and trimming) is GET's job.
        switch try await services.presence.heartbeat(session: session.description, user: user) {
        case .present(let joined, _):
            return JSONResponse.make(JSONValue.object(["user_id": .string(user), "joined": .bool(joined)]))
        case .full:
            throw DomainError.presenceFull(services.presence.maxUsers)
        }
    }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let session = try input.pathID("work_session_id")
        try await services.gate.require(
            .read, on: StreamRef(.workSession, session), context,
            otherwise: DomainError.notFound("work session", session))
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
        try await services.gate.require(
            .write, on: StreamRef(.workSession, session), context,
            otherwise: DomainError.notFound("work session", session))
        // Another user's presence is an administrator's to remove.
        if services.authentication != nil, user != context.principal.subject {
            try services.gate.require(.admin, context)
        }
        let left = try await services.presence.leave(session: session.description, user: user)
        return JSONResponse.make(JSONValue.object(["left": .bool(left)]))
    }
}
