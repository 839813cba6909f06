import Hummingbird
import RoboscopeDomain

/// `/locks/{work_session_id}`: an edit lock per work session (the workflow is
/// `SessionLocks`: Redis decides, the log records).
struct LocksController {
    let services: APIServices

    func acquire(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let sessionID = try input.pathID("work_session_id")
        // A body is optional on acquire (`ttl_seconds` defaults to 30).
        let body = try await input.fieldsIfAny()
        let ttl = try LockCommands.ttl(body)
        let enforce = try body.bool("enforce") ?? false
        try await requireVisible(.write, sessionID, context)
        let session = try await services.reads.requiredWorkSession(sessionID)
        return JSONResponse.make(
            try await services.sessionLocks.acquire(
                session, ttl: ttl, enforce: enforce, RequestIdentity.commandContext(request, context),
                claim: context.idempotency
            ))
    }

    func show(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let sessionID = try input.pathID("work_session_id")
        try await requireVisible(.read, sessionID, context)
        guard let holding = try await services.locks.current(session: sessionID.description) else {
            return JSONResponse.make(
                JSONValue.object([
                    "locked": .bool(false), "holder": .null, "expires_at": .null, "fencing_token": .null,
                    "enforce": .bool(false),
                ]))
        }
        return JSONResponse.make(
            JSONValue.object([
                "locked": .bool(true), "holder": .string(holding.holder),
                "expires_at": .string(
                    SessionLocks.expiry(ttlMilliseconds: holding.remainingMilliseconds).formatted(.wire)),
                "fencing_token": holding.fencingToken.map(JSONValue.integer) ?? .null,
                "enforce": .bool(holding.enforce),
            ]))
    }

    func extend(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let sessionID = try input.pathID("work_session_id")
        let body = try await input.fields()
        let token = try LockCommands.token(body)
        let ttl = try LockCommands.ttl(body)
        try await requireVisible(.write, sessionID, context)
        try await requireHolder(sessionID, context)
        return JSONResponse.make(
            try await services.sessionLocks.extend(
                sessionID, session: try await services.reads.workSession(sessionID), token: token, ttl: ttl,
                RequestIdentity.commandContext(request, context), claim: context.idempotency
            ))
    }

    func release(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let sessionID = try input.pathID("work_session_id")
        if try input.queryBool("force") == true {
            // Whoever holds it, without its token: an administrator's (docs/security.md).
            _ = try await input.fieldsIfAny()
            try await requireVisible(.admin, sessionID, context)
            return JSONResponse.make(
                try await services.sessionLocks.breakLock(
                    sessionID, session: try await services.reads.workSession(sessionID),
                    RequestIdentity.commandContext(request, context), claim: context.idempotency
                ))
        }
        let token = try LockCommands.token(try await input.fields())
        try await requireVisible(.write, sessionID, context)
        try await requireHolder(sessionID, context)
        return JSONResponse.make(
            try await services.sessionLocks.release(
                sessionID, session: try await services.reads.workSession(sessionID), token: token,
                RequestIdentity.commandContext(request, context), claim: context.idempotency
            ))
    }

    private func requireVisible(_ scope: Scope, _ sessionID: EntityID, _ context: RoboscopeRequestContext) async throws
    {
        try await services.gate.require(
            scope, on: StreamRef(.workSession, sessionID), context,
            otherwise: DomainError.notFound("work session", sessionID))
    }

    /// Extending or releasing a lock takes its token and the subject that took it (rule 5).
    private func requireHolder(_ sessionID: EntityID, _ context: RoboscopeRequestContext) async throws {
        guard services.authentication != nil,
            let holding = try await services.locks.current(session: sessionID.description),
            holding.holder != context.principal.subject
        else { return }
        throw DomainError(.forbidden, "the lock is held by another subject; only its holder extends or releases it")
    }
}
