import HTTPTypes
import Hummingbird
import RoboscopeAuth
import RoboscopeDomain

/// Puts the request's principal in its context, before anything else under `/api/v1`
/// runs. With authentication on it comes from the bearer token (401 without a valid
/// one: never a default principal); with it off, the deployment's one tenant with every
/// scope, acting as `X-User-Id` (docs/security.md).
struct PrincipalMiddleware: RouterMiddleware {
    typealias Context = RoboscopeRequestContext
    let verifier: TokenVerifier?
    let defaultTenant: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let verifier {
            do {
                context.principal = try await verifier.verifyRefreshing(authorization: request.headers[.authorization])
            } catch let failure as AuthenticationFailure {
                throw DomainError(.unauthorized, failure.reason)
            } catch {
                throw DomainError(.unauthorized, "the token cannot be verified")
            }
        } else {
            context.principal = .unauthenticated(actor: RequestIdentity.headerActor(request), tenant: defaultTenant)
        }
        return try await next(request, context)
    }
}
