import BlockingPool
import HTTPTypes
import Hummingbird
import RoboscopeAuth
import RoboscopeDomain

/// Puts the request's principal in its context, before anything else under `/api/v1`
/// runs. With authentication on it comes from the bearer token (401 without a valid
/// one: never a default principal); with it off, the deployment's one tenant with every
/// scope, acting as `X-User-Id` (docs/security.md).
struct PrincipalMiddleware: APIMiddleware {
    let verifier: TokenVerifier?
    let defaultTenant: String
    /// Refused tokens per client address (`--unauthenticated-rate-limit`): an address out
    /// of them is answered 429 before its next token is verified, so a flood of forged
    /// signatures costs a lookup, not a signature check each (issue 45).
    var refusals: TokenBuckets?

    func handle(_ request: Request, context: Context, next: Next) async throws -> Response {
        var context = context
        context.caller.enteredAPI()
        if let verifier {
            let address = context.clientAddress ?? "unknown"
            if let refusals, let wait = refusals.wait(for: address) {
                throw RequestBudgets.refusal(
                    "address", rate: refusals.rate, wait: wait,
                    what: "requests with a refused token")
            }
            do {
                context.principal = try await verifier.verifyRefreshing(authorization: request.headers[.authorization])
            } catch let failure as AuthenticationFailure {
                refusals?.charge(for: address, cost: 1)
                throw DomainError(failure.kind == .revoked ? .tokenRevoked : .unauthorized, failure.reason)
            } catch {
                refusals?.charge(for: address, cost: 1)
                throw DomainError(.unauthorized, "the token cannot be verified")
            }
        } else {
            context.principal = .unauthenticated(actor: RequestIdentity.headerActor(request), tenant: defaultTenant)
        }
        context.caller.identified(as: context.principal)
        // Every statement the request runs counts against its tenant's share of the pools.
        return try await PoolShare.$owner.withValue(context.principal.tenant) {
            try await next(request, context)
        }
    }
}
