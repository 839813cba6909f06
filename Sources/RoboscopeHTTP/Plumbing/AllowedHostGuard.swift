import Hummingbird
import RoboscopeDomain

/// With authentication off, answers only requests whose `Host` is one of
/// `--allowed-hosts`: a page on a rebinding domain reaches this server under its own host
/// name, and its requests say so (issue 45; docs/security.md, "Browsers and proxies").
struct AllowedHostGuard: APIMiddleware {
    let hosts: HostAllowList

    func handle(_ request: Request, context: Context, next: Next) async throws -> Response {
        guard hosts.permits(authority: request.head.authority) else {
            throw DomainError(
                .misdirectedRequest,
                "this Host is not one of --allowed-hosts: list it there to serve requests that name it",
                field: "Host")
        }
        return try await next(request, context)
    }
}
