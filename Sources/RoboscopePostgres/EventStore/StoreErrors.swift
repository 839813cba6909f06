import Foundation
import RoboscopeDomain

/// Turns what Postgres reports into errors a client can act on. The SQLSTATEs
/// `RB404`, `RB409`, `RB423`, `RBIKP` and `RBIKA` are raised by `eventlog.append`.
public enum StoreErrors {
    /// The entries of a SQLSTATE's JSON detail a client is told, under their wire names
    /// (`[wire name: name in the detail]`); absent ones stay absent.
    static func picked(_ detail: JSONObject, _ names: [String: String]) -> JSONObject {
        names.reduce(into: [:]) { picked, name in picked[name.key] = detail[name.value] }
    }

    public static func translate(_ error: PGError) -> any Error {
        if error.kind == .connection {
            return DomainError(.unavailable, "the database is unreachable")
        }
        if error.kind == .commitUnknown {
            return DomainError(
                .commitUnknown,
                "the write may or may not have been stored (\(error.message)); retry with the same Idempotency-Key")
        }
        let detail = error.detail.flatMap { try? JSONParser.parse(Array($0.utf8)).objectValue } ?? [:]
        switch (error.sqlState, error.constraint) {
        case ("RB409", _):
            let details = picked(
                detail, ["current_version": "current_version", "stream": "stream_type", "id": "stream_id"])
            return DomainError(.versionConflict, "changed concurrently: \(error.message)", details: details)
        case ("RB423", _):
            let details = picked(
                detail, ["holder": "holder", "fencing_token": "fencing_token", "expires_at": "expires_at"])
            return DomainError(.locked, "\(error.message); send the holder's X-Lock-Token", details: details)
        case ("RBIKP", _):
            return DomainError(
                .idempotencyKeyInProgress,
                "a request with this Idempotency-Key is still being processed; retry shortly",
                field: "Idempotency-Key")
        case ("RBIKA", _):
            return IdempotencyKeys.answered
        case ("RB404", _):
            let type = detail["stream_type"].flatMap {
                if case .string(let text) = $0 { return text } else { return nil }
            }
            let entity = type.map { $0.replacingOccurrences(of: "_", with: " ") } ?? "entity"
            return DomainError(.notFound, "\(entity) does not exist: \(error.message)")
        case ("23505", "spaces_tenant_key_key"), ("23505", "spaces_key_key"):
            return DomainError(.alreadyExists, "key: another space has this key", field: "key")
        case ("23505", "events_stream_version_key"):
            return DomainError(.alreadyExists, "id: an entity with this id already exists", field: "id")
        case ("25006", _):
            // A demoted primary (failover or partition): its connection is replaced
            // (`PGConnection.isOnStandby`) and the retry reaches the new primary.
            return DomainError(.unavailable, "the database is read-only here: a failover is under way; retry")
        case ("57014", _), ("40P01", _), ("40001", _):
            return DomainError(.unavailable, "the database could not finish the request in time; retry")
        case (let state?, _) where state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57"):
            return DomainError(.unavailable, "the database is unavailable")
        default:
            return error
        }
    }
}

extension PostgresPool {
    /// `withConnection` for the store's readers and writers: what Postgres reports comes
    /// out as `StoreErrors.translate` makes it (503 when unreachable, 409, 404, …).
    func translatingErrors<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws -> T) async throws -> T {
        do {
            return try await withConnection(body)
        } catch let error as PGError {
            throw StoreErrors.translate(error)
        }
    }
}
