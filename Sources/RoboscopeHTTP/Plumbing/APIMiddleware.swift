import Hummingbird

/// A middleware of this API: it runs with the API's request context.
protocol APIMiddleware: RouterMiddleware where Context == RoboscopeRequestContext {}

extension APIMiddleware {
    /// The rest of the chain, which a middleware calls to pass the request on.
    typealias Next = (Request, Context) async throws -> Response
}
