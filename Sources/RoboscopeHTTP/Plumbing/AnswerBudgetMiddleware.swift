import Hummingbird
import RoboscopeDomain

/// Refuses a large answer while the process's unsent answers fill `--response-memory`:
/// 503 `overloaded` with `Retry-After`, so that readers who do not read cannot make the
/// process hold more for everyone else. The answer's first MiB was rendered (the rest of
/// a larger one would be rendered as it is sent) and is dropped at once; small answers
/// always go.
struct AnswerBudgetMiddleware: APIMiddleware {
    let memory: AnswerMemory

    func handle(_ request: Request, context: Context, next: Next) async throws -> Response {
        let response = try await next(request, context)
        // A body without a length is streamed: over a MiB (StreamedArray).
        if request.method == .get, !memory.admits(response.body.contentLength ?? Int.max) {
            throw DomainError(.overloaded, "the server holds as many unsent answers as it may; retry in a moment")
        }
        return response
    }
}
