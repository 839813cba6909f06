import RoboscopeAuth
import RoboscopeDomain
import RoboscopePostgres
import RoboscopeRedis

/// The lock workflow: Redis decides who holds a work session's lock, the log records
/// every acquisition, extension and release (the fencing token is the acquisition's
/// version in the session's lock stream), and an acquisition whose record cannot be
/// appended is released again. Under an `Idempotency-Key` each step answers once: a
/// retried acquire gets the same token.
struct SessionLocks: Sendable {
    let store: EventStore
    let locks: LockStore
    let claims: RequestClaims
    let idempotency: IdempotencyKeys

    /// How long a keyed lock request keeps duplicates out if its process dies midway.
    static let claimMilliseconds: Int64 = 30_000

    func acquire(
        _ session: WorkSession, ttl: Int64, enforce: Bool, _ context: CommandContext, claim: IdempotencyClaim?
    ) async throws -> StoredAnswer {
        try await exclusively(claim) {
            let token = LockStore.newToken()
            let key = session.id.description
            guard
                try await locks.acquire(
                    session: key, token: token, holder: context.provenance.actor, ttlMilliseconds: ttl * 1000,
                    enforce: enforce
                )
            else {
                let holding = try await locks.current(session: key)
                // Nothing changed: nothing is stored under the key.
                return JSONResponse.answer(
                    JSONValue.object([
                        "acquired": .bool(false), "token": .null, "fencing_token": .null,
                        "holder": holding.map { .string($0.holder) } ?? .null,
                        "expires_at": holding.map {
                            .string(Self.expiry(ttlMilliseconds: $0.remainingMilliseconds).formatted(.wire))
                        } ?? .null,
                    ]))
            }
            let expiresAt = Self.expiry(ttlMilliseconds: ttl * 1000)
            let render = { @Sendable (appended: [EventStore.Appended]) -> StoredAnswer in
                JSONResponse.answer(
                    JSONValue.object([
                        "acquired": .bool(true), "token": .string(token),
                        "fencing_token": .integer(appended.first?.version ?? 0),
                        "expires_at": .string(expiresAt.formatted(.wire)), "enforce": .bool(enforce),
                    ]))
            }
            let batch = LockCommands.acquired(
                session, ttl: ttl, enforce: enforce, tokenSHA256: Digest.sha256Hex(token), context)
            do {
                let appended: [EventStore.Appended]
                let answer: StoredAnswer
                if let claim {
                    (appended, answer) = try await store.append(batch, claim: claim, answer: render)
                } else {
                    appended = try await store.append(batch)
                    answer = render(appended)
                }
                try await locks.recordFencingToken(
                    session: key, token: token, fencingToken: appended.first?.version ?? 0)
                return answer
            } catch {
                // Without its audit record the acquisition must not stand.
                _ = try? await locks.release(session: key, token: token)
                throw error
            }
        }
    }

    func extend(
        _ sessionID: EntityID, session: WorkSession?, token: String, ttl: Int64, _ context: CommandContext,
        claim: IdempotencyClaim?
    ) async throws -> StoredAnswer {
        try await exclusively(claim) {
            let renewed = try await locks.extend(
                session: sessionID.description, token: token, ttlMilliseconds: ttl * 1000)
            let answer = JSONResponse.answer(
                JSONValue.object(["extended": .bool(renewed != nil), "acquired": .bool(renewed != nil)]))
            // The lock table in Postgres follows the new expiry, so enforcement lasts as long.
            if let holding = renewed, let session {
                try await store.append(
                    LockCommands.extended(
                        session, holder: holding.holder, ttl: ttl, enforce: holding.enforce,
                        fencingToken: holding.fencingToken, context
                    ), claim: claim, answer: answer)
            }
            return answer
        }
    }

    func release(
        _ sessionID: EntityID, session: WorkSession?, token: String, _ context: CommandContext, claim: IdempotencyClaim?
    ) async throws -> StoredAnswer {
        try await exclusively(claim) {
            guard let released = try await locks.release(session: sessionID.description, token: token) else {
                return JSONResponse.answer(JSONValue.object(["released": .bool(false)]))
            }
            let answer = JSONResponse.answer(JSONValue.object(["released": .bool(true)]))
            if let session {
                try await store.append(
                    LockCommands.released(
                        session, holder: released.holder, enforce: released.enforce,
                        fencingToken: released.fencingToken, context
                    ), claim: claim, answer: answer)
            }
            return answer
        }
    }

    /// An administrator ends the lock, whoever holds it and without its token; recorded
    /// as `work_session.lock_broken` naming the holder it ended.
    func breakLock(
        _ sessionID: EntityID, session: WorkSession?, _ context: CommandContext, claim: IdempotencyClaim?
    ) async throws -> StoredAnswer {
        try await exclusively(claim) {
            guard let broken = try await locks.forceRelease(session: sessionID.description) else {
                return JSONResponse.answer(JSONValue.object(["released": .bool(false)]))
            }
            let answer = JSONResponse.answer(
                JSONValue.object(["released": .bool(true), "holder": .string(broken.holder)]))
            if let session {
                try await store.append(
                    LockCommands.broken(
                        session, holder: broken.holder, enforce: broken.enforce, fencingToken: broken.fencingToken,
                        context
                    ), claim: claim, answer: answer)
            }
            return answer
        }
    }

    /// Runs `body` while no other request with the same key runs (409 otherwise), and
    /// only if the key has not been answered: Redis decides a lock step, so no append
    /// would refuse a retry before it acquired or released again.
    private func exclusively(
        _ claim: IdempotencyClaim?, _ body: () async throws -> StoredAnswer
    ) async throws -> StoredAnswer {
        guard let claim else { return try await body() }
        let id = Digest.sha256Hex("\(claim.actor)\n\(claim.key)")
        guard try await claims.claim(id, ttlMilliseconds: Self.claimMilliseconds) else {
            throw DomainError(
                .idempotencyKeyInProgress,
                "a request with this Idempotency-Key is still being processed; retry shortly",
                field: "Idempotency-Key")
        }
        do {
            try await idempotency.refuseAnswered(claim)
            let answer = try await body()
            try? await claims.release(id)
            return answer
        } catch {
            try? await claims.release(id)
            throw error
        }
    }

    static func expiry(ttlMilliseconds: Int64) -> Timestamp {
        var time = WallClock.now()
        time.microsecondsSinceEpoch += ttlMilliseconds * 1000
        return time
    }
}
