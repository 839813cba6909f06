import HTTPTypes
import Hummingbird
import Tracing

/// Each request as a server span (DESIGN.md, "Following one write: tracing"), child of
/// the caller's W3C `traceparent` (and `tracestate`) when it sent one: named
/// `<METHOD> <route template>` once the router found the route, with `http.*` attributes
/// and the tenant the request turned out to be (`roboscope.tenant`, learnt further in by
/// `PrincipalMiddleware`). Everything the request does in its task (database jobs, the
/// append) is a child. Hummingbird's `TracingMiddleware` names the span by the route
/// alone and cannot learn the tenant, hence this one. Only with tracing on.
struct RequestSpanMiddleware: RouterMiddleware {
    typealias Context = RoboscopeRequestContext

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var parent = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &parent, using: HeaderExtractor())
        let method = request.method.rawValue
        let span = InstrumentationSystem.tracer.startSpan("\(method) unmatched route", context: parent, ofKind: .server)
        span.attributes["http.request.method"] = method
        span.attributes["url.path"] = request.uri.path
        defer {
            if let route = context.endpointPath {
                span.operationName = "\(method) \(route)"
                span.attributes["http.route"] = route
            }
            if let tenant = context.caller.principal?.tenant { span.attributes["roboscope.tenant"] = tenant }
            span.end()
        }
        do {
            let response = try await ServiceContext.$current.withValue(span.context) {
                try await next(request, context)
            }
            span.attributes["http.response.status_code"] = Int(response.status.code)
            return response
        } catch {
            span.recordError(error)
            if let status = (error as? any HTTPResponseError)?.status {
                span.attributes["http.response.status_code"] = Int(status.code)
            }
            throw error
        }
    }

    private struct HeaderExtractor: Extractor {
        func extract(key: String, from headers: HTTPFields) -> String? {
            HTTPField.Name(key).flatMap { headers[$0] }
        }
    }
}
