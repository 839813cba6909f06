import RoboscopeDomain
import RoboscopePostgres

/// Runs a read-decide-append cycle. When the client named no version, a conflict
/// only means someone else wrote between our read and our append: read again and
/// retry, backing off with jitter so that a crowd of writers on one entity spreads
/// out. When it named one, the conflict is the client's to resolve (409).
enum WriteRetry {
    static let attempts = 40

    static func run<T>(
        store: EventStore, clientVersion: Int64?, _ decide: () async throws -> (T, AppendBatch)
    ) async throws -> T {
        var attempt = 1
        while true {
            let (value, batch) = try await decide()
            do {
                try await store.append(batch)
                return value
            } catch let error as DomainError where error.code == .versionConflict && clientVersion == nil && attempt < attempts {
                let ceiling = min(20_000, 500 << min(attempt, 6))
                try await Task.sleep(for: .microseconds(Int.random(in: 0...ceiling)))
                attempt += 1
            }
        }
    }
}
