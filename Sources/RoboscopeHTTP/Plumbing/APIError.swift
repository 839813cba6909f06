import Foundation
import HTTPTypes
import Hummingbird
import RoboscopeDomain
import RoboscopePostgres
import RoboscopeRedis

/// The one place where errors become HTTP responses:
/// `{"error": {"code": "...", "message": "...", "field": ..., ...}}`.
enum APIError {
    static func status(for code: DomainError.Code) -> HTTPResponse.Status {
        switch code {
        case .malformedRequest: return .badRequest
        case .invalidField: return .unprocessableContent
        case .notFound: return .notFound
        case .versionConflict, .alreadyExists, .idempotencyKeyInProgress: return .conflict
        case .idempotencyKeyReused: return .unprocessableContent
        case .payloadTooLarge: return .contentTooLarge
        case .locked: return HTTPResponse.Status(code: 423, reasonPhrase: "Locked")
        case .unavailable, .overloaded, .commitUnknown: return .serviceUnavailable
        case .unauthorized, .tokenRevoked: return .unauthorized
        case .forbidden: return .forbidden
        case .rateLimited, .presenceFull: return .tooManyRequests
        case .methodNotAllowed: return .methodNotAllowed
        case .headersTooLarge: return .requestHeaderFieldsTooLarge
        case .requestTimeout: return .requestTimeout
        case .badRequest: return .badRequest
        case .unsupportedMediaType: return .unsupportedMediaType
        case .misdirectedRequest: return .misdirectedRequest
        default:
            // A code without a status is a bug here, not the client's doing.
            return .internalServerError
        }
    }

    /// The one shape of every error body: `{"error": {"code", "message", "field"?, "request_id", …}}`.
    static func body(_ error: DomainError, requestID: String) -> [UInt8] {
        var body: JSONObject = error.details
        body["code"] = .string(error.code.rawValue)
        body["message"] = .string(error.message)
        if let field = error.field { body["field"] = .string(field) }
        body["request_id"] = .string(requestID)
        return JSONValue.object(["error": .object(body)]).jsonBytes(.wire)
    }

    static func response(for error: DomainError, requestID: String) -> Response {
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        let retrySoon: Set<DomainError.Code> = [.unavailable, .overloaded, .commitUnknown, .idempotencyKeyInProgress]
        if retrySoon.contains(error.code) {
            headers[.retryAfter] = "1"
        }
        if error.code == .rateLimited || error.code == .presenceFull,
            case .integer(let seconds)? = error.details["retry_after"]
        {
            headers[.retryAfter] = String(seconds)
        }
        if error.code == .unauthorized || error.code == .tokenRevoked {
            headers[.wwwAuthenticate] = "Bearer"
        }
        return Response(
            status: status(for: error.code), headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: body(error, requestID: requestID))))
    }

    /// Maps framework errors (unknown route, wrong method) to the same body shape.
    static func domainError(from error: any Error) -> DomainError? {
        if let error = error as? DomainError { return error }
        if error is RedisError {
            return DomainError(.unavailable, "redis is unavailable")
        }
        if let error = error as? HTTPError {
            let message = error.body ?? error.status.reasonPhrase
            switch error.status.code {
            case 404: return DomainError(.notFound, "no such resource")
            case 405: return DomainError(.methodNotAllowed, "method not allowed")
            case 413: return DomainError(.payloadTooLarge, "the body is larger than the limit")
            case 400..<500:
                return DomainError(.malformedRequest, message, details: ["status": .integer(Int64(error.status.code))])
            default: return nil
            }
        }
        return nil
    }
}
