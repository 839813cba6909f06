import Foundation
import HTTPTypes
import Hummingbird
import Logging
import RoboscopeDomain
import RoboscopeMetrics

/// Gives every request an id (the client's `X-Request-Id` or a new one), returns it
/// in a header, and turns every error into a JSON body. Unknown errors are logged
/// with the request id and answered 500 without any detail. Every request ends with
/// one access-log line at info (method, path, status, the refusal's `code`, tenant,
/// subject, client address, duration, the `traceparent`'s trace id), carrying the request
/// id like every other line logged for the request; and, under `/api/v1`, one count in
/// its tenant's `roboscope_tenant_requests_total` by outcome.
struct ErrorMiddleware: APIMiddleware {
    static let contentTypeOptions = HTTPField.Name("X-Content-Type-Options")!
    static let traceParent = HTTPField.Name("traceparent")!
    /// Where API requests are counted per tenant (nil: the probes' port, which has none).
    let tenantMetrics: TenantMetrics?

    func handle(_ request: Request, context: Context, next: Next) async throws -> Response {
        let started = ContinuousClock.now
        let requestID = RequestIdentity.requestID(request)
        var context = context
        context.requestID = requestID
        context.logger[metadataKey: "request_id"] = "\(requestID)"
        var response: Response
        var code: String?
        do {
            response = try await next(request, context)
        } catch {
            if let domainError = APIError.domainError(from: error) {
                response = APIError.response(for: domainError, requestID: requestID)
                code = domainError.code.rawValue
                if response.status == .internalServerError {
                    context.logger.error(
                        "an error code without a status",
                        metadata: ["code": "\(domainError.code)", "error": "\(domainError)"])
                }
            } else if let status = (error as? HTTPError)?.status {
                response = Response(status: status)
            } else if error is CancellationError {
                // The client went away (a long poll or a report it left): nobody reads this.
                context.logger.debug("request cancelled: the client closed the connection")
                response = Response(status: .init(code: 499, reasonPhrase: "Client Closed Request"))
            } else {
                context.logger.error("request failed", metadata: ["error": "\(error)"])
                let internalError = DomainError(
                    .internalError, "internal error; quote the request id")
                response = APIError.response(for: internalError, requestID: requestID)
                response.status = .internalServerError
                code = internalError.code.rawValue
            }
        }
        response.headers[RequestIdentity.requestIDHeader] = requestID
        // No browser guesses a JSON answer (or an error body echoing input) to be HTML.
        response.headers[Self.contentTypeOptions] = "nosniff"
        // The connection closes after this answer when the client asked so; saying it
        // lets a proxy in between close its side too, so the client never reuses a
        // connection that is gone (RFC 9112 §9.6).
        if request.headers[values: .connection].contains(where: { $0.lowercased().contains("close") }) {
            response.headers[.connection] = "close"
        }
        let elapsed = (ContinuousClock.now - started) / .milliseconds(1)
        let principal = context.caller.principal
        var fields: Logger.Metadata = [
            "method": "\(request.method)", "path": "\(request.uri.path)", "status": "\(response.status.code)",
            "duration_ms": "\(elapsed)", "client_address": "\(context.clientAddress ?? "unknown")",
        ]
        if let code { fields["code"] = "\(code)" }
        if let principal {
            fields["tenant"] = "\(principal.tenant)"
            fields["subject"] = "\(principal.subject)"
        }
        if let traceID = TraceParent.traceID(request.headers[Self.traceParent]) { fields["trace_id"] = "\(traceID)" }
        context.logger.info("request", metadata: fields)
        if let tenantMetrics, context.caller.reachedAPI {
            tenantMetrics.request(
                tenant: principal?.tenant ?? "",
                outcome: TenantMetrics.Outcome(status: Int(response.status.code)))
        }
        return response
    }
}
