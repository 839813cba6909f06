import HTTPTypes
import Hummingbird
import RoboscopeDomain
import RoboscopeWire

/// Refuses what a page of another site could make a user's browser send: a write
/// carrying a foreign `Origin` (403) and a write body that is not JSON (415; a form or
/// `fetch` with `text/plain` needs no CORS preflight, `application/json` does).
/// Native clients send no `Origin` and always send JSON (docs/security.md).
struct CrossSiteWriteGuard: APIMiddleware {
    let origins: OriginPolicy

    func handle(_ request: Request, context: Context, next: Next) async throws -> Response {
        switch request.method {
        case .get, .head, .options:
            return try await next(request, context)
        default:
            break
        }
        let origin = request.headers[.origin]
        guard origins.permits(origin: origin, host: request.head.authority) else {
            throw DomainError(
                .forbidden,
                "Origin \(String((origin ?? "").prefix(100))) may not write here; list it in --allowed-origins",
                field: "Origin")
        }
        if request.method != .delete || Self.hasBody(request) {
            try Self.checkContentType(request)
        }
        return try await next(request, context)
    }

    /// A body is JSON (`application/json`, any parameters) or absent.
    static func checkContentType(_ request: Request) throws {
        guard let contentType = request.headers[.contentType] else {
            guard !hasBody(request) else {
                throw DomainError(
                    .unsupportedMediaType, "Content-Type is missing; send the body as application/json",
                    field: "Content-Type")
            }
            return
        }
        let parameters = contentType.utf8.firstIndex(of: UInt8(ascii: ";")) ?? contentType.endIndex
        guard HeaderText.equalsIgnoringCase(HeaderText.trimmed(contentType[..<parameters]), "application/json") else {
            throw DomainError(
                .unsupportedMediaType,
                "Content-Type \(String(contentType.prefix(100))) is not accepted; send application/json",
                field: "Content-Type")
        }
    }

    static func hasBody(_ request: Request) -> Bool {
        if request.headers[.transferEncoding] != nil { return true }
        if let length = request.headers[.contentLength], let bytes = Int(length) { return bytes > 0 }
        return false
    }
}
