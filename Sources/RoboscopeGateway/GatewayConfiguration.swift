import RoboscopeAuth
import RoboscopeDomain

/// Everything the gateway can be told (flags and environment of `roboscope serve`;
/// docs/websocket.md lists the defaults and why).
public struct GatewayConfiguration: Sendable {
    public var host = "0.0.0.0"
    public var port = 8081
    /// Several processes may listen on `port` (SO_REUSEPORT): the kernel spreads new
    /// connections over their listeners.
    public var reusePort = false
    /// Event loop threads; one per core by default.
    public var threads = 2
    /// The largest message a client may send (all fragments together).
    public var maxMessageSize = 1 << 20
    /// Bytes queued for one client before it is closed as too slow (1013).
    public var maxBufferedBytes = 4 << 20
    /// A connection silent this long is pinged; one that stays silent as long again is closed.
    public var pingInterval: Duration = .seconds(30)
    public var maxConnectionsPerClient = 1000
    /// Connections the process's gateway holds at once; the gateway lowers it to the
    /// descriptor limit less a reserve (`Gateway.connectionCeiling`).
    public var maxConnections = Int.max
    public var maxSubscriptionsPerConnection = 100
    /// Subscriptions of one connection waiting for the tailer at once (withdrawn ones
    /// count until the tailer gets to them); the next gets `rate_limited`.
    public var maxPendingSubscriptions = 4
    /// Work sessions (and users, without authentication) one connection may be present in.
    public var maxPresencePerConnection = 16
    /// Present users a session may hold (`--presence-max-users`, enforced by Redis).
    public var presenceMaxUsers = 1000
    /// Client ops (`subscribe`, `unsubscribe`, `presence`, `auth`) per second on one
    /// connection, and the burst allowed; past it, `error` `rate_limited`.
    public var opRate = 20.0
    public var opBurst = 40.0
    /// The same, per subject across all its connections.
    public var subjectOpRate = 100.0
    public var subjectOpBurst = 200.0
    /// The same per tenant, all its subjects together (bursts of twice the rate).
    public var tenantOpRate = 1000.0
    /// How long a `presence` op outlives its connection, so a quick reconnect is no leave/join.
    public var presenceGrace: Duration = .seconds(5)
    /// How long a heartbeat keeps a user present (the REST presence window).
    public var presenceWindow: Duration = .seconds(30)
    /// A standby the tailer reads catch-ups on once it has caught up with their topic
    /// (`--read-database-url`; `StandbyReads`); nil reads them on the primary.
    public var readDatabaseURL: String?
    /// Serve `/api/v1/ws/echo` (for the conformance suite).
    public var echo = false
    /// Most events a `since` may replay before the client is told to reload over REST.
    public var maxCatchUpEvents = 10_000
    /// How often the log is read when no notification arrives.
    public var pollInterval: Duration = .milliseconds(500)
    /// Bearer-token checks on the upgrade; nil accepts every client (the local default).
    public var authentication: TokenVerifier?
    /// The one tenant without authentication (`--default-tenant`).
    public var defaultTenant = "default"
    /// Pages of other sites that may open a socket (`--allowed-origins`); a browser's
    /// upgrade from anywhere else is refused with 403 (cross-site WebSocket hijacking).
    public var allowedOrigins = OriginPolicy()
    /// The hosts an upgrade may name with authentication off (`--allowed-hosts`; DNS rebinding).
    public var allowedHosts = HostAllowList()
    /// Proxies whose `X-Forwarded-For` names the client (`--trusted-proxies`): behind an
    /// ingress, the per-client connection cap counts the client, not the ingress.
    public var trustedProxies = TrustedProxies()

    /// Each tenant's plan (`--tenant-plans-file`): its `max_connections` on this process.
    public var plans: TenantPlans?
    /// Lines a second about refused upgrades and 4001/4003 closes (`--log-refusals-per-second`).
    public var logRefusalsPerSecond = 20
    /// The deployment this gateway serves (`--deployment-name`): it publishes its sockets,
    /// and hears disconnects, under that name only.
    public var deploymentName = "local"

    /// permessage-deflate for clients that offer it (`--ws-deflate`); nil turns it off.
    public var deflate: DeflateSettings? = DeflateSettings()

    public init() {}
}

/// How the gateway compresses (docs/websocket.md, "Compression").
public struct DeflateSettings: Sendable {
    /// The largest window, the server's and the client's when the client's offer lets us
    /// bound it (`--ws-deflate-window-bits`, 9...15).
    public var maxWindowBits: Int
    /// Messages smaller than this go uncompressed: a few hundred bytes of JSON shrink by
    /// too little to pay for the CPU, and RSV1 is per message.
    public var threshold: Int

    public init(maxWindowBits: Int = 15, threshold: Int = 256) {
        self.maxWindowBits = maxWindowBits
        self.threshold = threshold
    }
}
