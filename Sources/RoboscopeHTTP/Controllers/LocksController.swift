import Foundation
import Hummingbird
import RoboscopeDomain
import RoboscopeRedis

/// `/locks/{work_session_id}`: an edit lock per work session, held in Redis with a TTL.
/// Acquire and release are appended to the log; the fencing token of an acquisition is
/// its version in the session's lock stream, so it only ever grows.
struct LocksController {
    let services: APIServices

    func addRoutes(to group: RouterGroup<RoboscopeRequestContext>) {
        group.post("locks/:work_session_id", use: acquire)
        group.get("locks/:work_session_id", use: show)
        group.post("locks/:work_session_id/extend", use: extend)
        group.delete("locks/:work_session_id", use: release)
    }

    func acquire(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let sessionID = try input.pathID("work_session_id")
        let body = try await optionalFields(input)
        let ttl = try LockCommands.ttl(body)
        let enforce = try body.bool("enforce") ?? false
        let session = try await services.reads.requiredWorkSession(sessionID)
        let commandContext = RequestIdentity.commandContext(request, context)
        let token = LockStore.newToken()
        let key = sessionID.description
        guard try await services.locks.acquire(
            session: key, token: token, holder: commandContext.provenance.actor, ttlMilliseconds: ttl * 1000, enforce: enforce
        ) else {
            let holding = try await services.locks.current(session: key)
            return JSONResponse.make(JSONValue.object([
                "acquired": .bool(false), "token": .null, "fencing_token": .null,
                "holder": holding.map { .string($0.holder) } ?? .null,
                "expires_at": holding.map { .string(Self.expiry($0).formatted(.wire)) } ?? .null,
            ]))
        }
        do {
            let appended = try await services.store.append(
                LockCommands.acquired(session, ttl: ttl, enforce: enforce, tokenSHA256: sha256(token), commandContext)
            )
            let fencingToken = appended.first?.version ?? 0
            try await services.locks.recordFencingToken(session: key, token: token, fencingToken: fencingToken)
            return JSONResponse.make(JSONValue.object([
                "acquired": .bool(true), "token": .string(token), "fencing_token": .integer(fencingToken),
                "expires_at": .string(Self.expiry(ttlMilliseconds: ttl * 1000).formatted(.wire)), "enforce": .bool(enforce),
            ]))
        } catch {
            // Without its audit record the acquisition must not stand.
            _ = try? await services.locks.release(session: key, token: token)
            throw error
        }
    }

    func show(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let sessionID = try input.pathID("work_session_id")
        guard let holding = try await services.locks.current(session: sessionID.description) else {
            return JSONResponse.make(JSONValue.object([
                "locked": .bool(false), "holder": .null, "expires_at": .null, "fencing_token": .null, "enforce": .bool(false),
            ]))
        }
        return JSONResponse.make(JSONValue.object([
            "locked": .bool(true), "holder": .string(holding.holder),
            "expires_at": .string(Self.expiry(holding).formatted(.wire)),
            "fencing_token": holding.fencingToken.map(JSONValue.integer) ?? .null, "enforce": .bool(holding.enforce),
        ]))
    }

    func extend(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let sessionID = try input.pathID("work_session_id")
        let body = try await input.fields()
        let token = try LockCommands.token(body)
        let ttl = try LockCommands.ttl(body)
        let renewed = try await services.locks.extend(session: sessionID.description, token: token, ttlMilliseconds: ttl * 1000)
        let extended = renewed != nil
        // The lock table in Postgres follows the new expiry, so enforcement lasts as long.
        if let holding = renewed, let session = try await services.reads.workSession(sessionID) {
            try await services.store.append(LockCommands.extended(
                session, holder: holding.holder, ttl: ttl, enforce: holding.enforce, fencingToken: holding.fencingToken,
                RequestIdentity.commandContext(request, context)
            ))
        }
        return JSONResponse.make(JSONValue.object(["extended": .bool(extended), "acquired": .bool(extended)]))
    }

    func release(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let sessionID = try input.pathID("work_session_id")
        let token = try LockCommands.token(try await input.fields())
        guard let released = try await services.locks.release(session: sessionID.description, token: token) else {
            return JSONResponse.make(JSONValue.object(["released": .bool(false)]))
        }
        if let session = try await services.reads.workSession(sessionID) {
            try await services.store.append(LockCommands.released(
                session, holder: released.holder, enforce: released.enforce, fencingToken: released.fencingToken,
                RequestIdentity.commandContext(request, context)
            ))
        }
        return JSONResponse.make(JSONValue.object(["released": .bool(true)]))
    }

    /// A body is optional on acquire (`ttl_seconds` defaults to 30).
    private func optionalFields(_ input: RequestInput) async throws -> FieldReader {
        do {
            return try await input.fields()
        } catch let error as DomainError where error.code == .malformedRequest && error.message.contains("empty") {
            return FieldReader([:])
        }
    }

    static func expiry(_ holding: LockStore.Holding) -> Timestamp {
        expiry(ttlMilliseconds: holding.remainingMilliseconds)
    }

    static func expiry(ttlMilliseconds: Int64) -> Timestamp {
        var time = Clock.now()
        time.microsecondsSinceEpoch += ttlMilliseconds * 1000
        return time
    }
}
