import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// Runs a write: read, decide, append, and answer. The answer is rendered before the
/// append so that, under an `Idempotency-Key`, it is stored in the append's
/// transaction (docs/sync.md).
///
/// When the client named no version, a conflict only means someone else wrote between
/// our read and our append: read again and retry, backing off with jitter so that a
/// crowd of writers on one entity spreads out. When it named one, the conflict is the
/// client's to resolve (409).
enum WriteRetry {
    static let attempts = 40

    /// A write that decides on what it reads: `read` (on the pool's connection, which
    /// then appends what `decide` returns), in one pool job per attempt.
    static func run<State: Sendable>(
        store: EventStore, context: RoboscopeRequestContext, clientVersion: Int64?,
        reading read: @escaping @Sendable (PGConnection) throws -> State,
        _ decide: @escaping @Sendable (State) throws -> (StoredAnswer, AppendBatch)
    ) async throws -> Response {
        var attempt = 1
        while true {
            do {
                return JSONResponse.make(try await store.append(after: read, decide, claim: context.idempotency))
            } catch let error as DomainError
                where error.code == .versionConflict && clientVersion == nil && attempt < attempts
            {
                let ceiling = min(20_000, 500 << min(attempt, 6))
                try await Task.sleep(for: .microseconds(Int.random(in: 0...ceiling)))
                attempt += 1
            }
        }
    }

    /// A write that reads nothing it could race on (a create): decide once, append.
    static func once(
        store: EventStore, context: RoboscopeRequestContext, _ decide: () throws -> (StoredAnswer, AppendBatch)
    ) async throws -> Response {
        let (answer, batch) = try decide()
        try await store.append(batch, claim: context.idempotency, answer: answer)
        return JSONResponse.make(answer)
    }
}
