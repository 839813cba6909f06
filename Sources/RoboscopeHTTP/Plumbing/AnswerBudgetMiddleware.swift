import Hummingbird
import RoboscopeDomain

/// Refuses a large answer while the process's unsent answers fill `--response-memory`:
/// 503 `overloaded` with `Retry-After`, so that readers who do not read cannot make the
/// process hold more for everyone else. The answer was rendered (pages are bounded by
/// their limits) and is dropped at once; small answers always go.
struct AnswerBudgetMiddleware: RouterMiddleware {
    typealias Context = RoboscopeRequestContext
    let memory: AnswerMemory

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let response = try await next(request, context)
        if request.method == .get, let length = response.body.contentLength, !memory.admits(length) {
            throw DomainError(.overloaded, "the server holds as many unsent answers as it may; retry in a moment")
        }
        return response
    }
}
