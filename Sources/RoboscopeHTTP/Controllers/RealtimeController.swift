import Hummingbird
import RoboscopeDomain

/// `GET /realtime`: where clients open the WebSocket. A deployment behind an ingress or
/// a proxy names its public URL (`--realtime-url`); otherwise it is the host the request
/// came to, on the gateway's port, when that host is one of `--allowed-hosts`: a `Host`
/// header is the client's to write, and an answer echoing it would send a client, or a
/// cache shared with others, to an attacker's server.
struct RealtimeController {
    let services: APIServices

    func show(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let url = services.realtime.url(requestedAt: request.head.authority)
        return JSONResponse.make(JSONValue.object(["websocket_url": .string(url)]))
    }
}

/// Where the WebSocket gateway is, as `GET /realtime` names it.
public struct RealtimeSettings: Sendable {
    /// The public URL, when one is configured.
    public var url: String?
    /// The gateway's port, for the same-host default.
    public var port: Int
    /// Hosts a request's `Host` may name (`--allowed-hosts`): for the same-host default,
    /// where the first stands in for any other, and, with authentication off, for a request
    /// to be answered at all (`AllowedHostGuard`).
    public var allowedHosts: HostAllowList

    public init(url: String? = nil, port: Int = 8081, allowedHosts: HostAllowList = HostAllowList()) {
        self.url = url
        self.port = port
        self.allowedHosts = allowedHosts
    }

    /// The configured URL, else `ws://<host>:<port>/api/v1/ws` for the request's host
    /// when it is allowed, else for the first allowed host.
    public func url(requestedAt authority: String?) -> String {
        if let url { return url }
        let requested = HostAllowList.hostname(of: authority)
        let host = requested.flatMap { allowedHosts.hosts.contains($0) ? $0 : nil } ?? allowedHosts.hosts[0]
        return "ws://\(host):\(port)/api/v1/ws"
    }
}
