import Hummingbird
import RoboscopeDomain

/// `GET /realtime`: where clients open the WebSocket. A deployment behind an ingress or
/// a proxy names its public URL (`--realtime-url`); otherwise it is the host the request
/// came to, on the gateway's port.
struct RealtimeController {
    let services: APIServices

    func addRoutes(to group: RouterGroup<RoboscopeRequestContext>) {
        group.get("realtime", use: show)
    }

    func show(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let url = services.realtime.url ?? Self.sameHost(request.head.authority, port: services.realtime.port)
        return JSONResponse.make(JSONValue.object(["websocket_url": .string(url)]))
    }

    /// `ws://<the request's host>:<port>/api/v1/ws` (IPv6 literals keep their brackets).
    static func sameHost(_ authority: String?, port: Int) -> String {
        var host = authority ?? "127.0.0.1"
        if host.hasPrefix("[") {
            host = String(host[...(host.firstIndex(of: "]") ?? host.index(before: host.endIndex))])
        } else if let colon = host.lastIndex(of: ":") {
            host = String(host[..<colon])
        }
        return "ws://\(host.isEmpty ? "127.0.0.1" : host):\(port)/api/v1/ws"
    }
}

/// Where the WebSocket gateway is, as `GET /realtime` names it.
public struct RealtimeSettings: Sendable {
    /// The public URL, when one is configured.
    public var url: String?
    /// The gateway's port, for the same-host default.
    public var port: Int

    public init(url: String? = nil, port: Int = 8081) {
        self.url = url
        self.port = port
    }
}
