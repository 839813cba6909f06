import Foundation

/// What a call can fail with, typed so that an app can act on each.
public enum RoboscopeError: Error, Sendable, Equatable {
    /// Someone else changed the entity (409 `version_conflict`): `currentVersion` is what
    /// the server holds now.
    case versionConflict(currentVersion: Int64?, message: String)
    /// The work session is under another client's enforced lock (423).
    case locked(holder: String?, fencingToken: Int64?, expiresAt: Date?)
    /// A field failed validation (422): `field` names it (`p1`, `markers[3].color`).
    case invalid(field: String?, message: String)
    /// The request itself is malformed (400): `field` names the parameter or header.
    case badRequest(field: String?, message: String)
    case notFound(message: String)
    /// A key or id is taken (409 `already_exists`).
    case alreadyExists(field: String?, message: String)
    /// The same Idempotency-Key came with another request (422): a bug in the caller.
    case idempotencyKeyReused(message: String)
    /// Postgres or Redis is unreachable, or the request with this key still runs (503,
    /// 409 `idempotency_key_in_progress`): retry after `retryAfter` seconds.
    case unavailable(retryAfter: Double?, message: String)
    case unauthorized(message: String)
    /// The token lacks a scope (403 `forbidden`): `scopeNeeded` names it (`write`,
    /// `admin`, `audit`, ...), or the token no longer covers a topic (WebSocket).
    case forbidden(scopeNeeded: String?, message: String)
    case rateLimited(retryAfter: Double?)
    /// Any other status.
    case http(status: Int, code: String?, message: String)
    /// The network failed (no connection, reset, no answer in time): the request may or
    /// may not have reached the server. Writes are retried with their key; reads may be
    /// retried. `urlError` keeps URLSession's code.
    case transport(TransportFailure)
    /// The server said something the kit cannot read (a bug on one side).
    case malformedResponse(String)
    /// The caller cancelled.
    case cancelled

    /// The server refused the token (401, WebSocket close 4001) or the principal (403,
    /// close 4003).
    public var isTokenRefusal: Bool {
        switch self {
        case .unauthorized, .forbidden: return true
        default: return false
        }
    }

    /// Whether sending again can succeed (with the same idempotency key for a write).
    public var isRetryable: Bool {
        switch self {
        case .unavailable, .transport, .rateLimited: return true
        default: return false
        }
    }

    /// Builds the error for a non-2xx answer from its status, headers and body.
    public static func from(status: Int, headers: [String: String], body: Data) -> RoboscopeError {
        let error = (try? WireCoding.decoder().decode(ErrorEnvelope.self, from: body))?.error
        let message = error?.message ?? "HTTP \(status)"
        let retryAfter = headers.first { $0.key.lowercased() == "retry-after" }.flatMap { Double($0.value) }
        switch (status, ErrorCode(error?.code ?? "")) {
        case (409, .versionConflict): return .versionConflict(currentVersion: error?.currentVersion, message: message)
        case (409, .idempotencyKeyInProgress): return .unavailable(retryAfter: retryAfter ?? 1, message: message)
        case (409, .alreadyExists): return .alreadyExists(field: error?.field, message: message)
        case (423, _):
            return .locked(holder: error?.holder, fencingToken: error?.fencingToken, expiresAt: error?.expiresAt)
        case (422, .idempotencyKeyReused): return .idempotencyKeyReused(message: message)
        case (422, _): return .invalid(field: error?.field, message: message)
        case (400, _): return .badRequest(field: error?.field, message: message)
        case (401, _): return .unauthorized(message: message)
        case (403, _): return .forbidden(scopeNeeded: error?.scopeNeeded, message: message)
        case (404, _): return .notFound(message: message)
        case (429, _): return .rateLimited(retryAfter: retryAfter)
        case (503, _), (502, _), (504, _): return .unavailable(retryAfter: retryAfter, message: message)
        default: return .http(status: status, code: error?.code, message: message)
        }
    }

    struct ErrorEnvelope: Decodable {
        struct Body: Decodable {
            var code: String?
            var message: String?
            var field: String?
            var currentVersion: Int64?
            var holder: String?
            var fencingToken: Int64?
            var expiresAt: Date?
            var scopeNeeded: String?

            enum CodingKeys: String, CodingKey, CaseIterable {
                case code, message, field, holder
                case scopeNeeded = "scope_needed"
                case currentVersion = "current_version"
                case fencingToken = "fencing_token"
                case expiresAt = "expires_at"
            }
        }

        var error: Body
    }
}
