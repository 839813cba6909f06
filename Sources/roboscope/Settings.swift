import ArgumentParser
import Foundation
import RoboscopePostgres

/// One setting of `roboscope`, declared once: its flag, its environment variable, its
/// default, the values it accepts and what it means. The flags' help, their resolution
/// (flag, else environment, else default, refused outside its bounds) and the
/// configuration reference of docs/operations.md (`roboscope settings`) all come from here.
struct Setting<Value: Sendable>: Sendable {
    /// The long flag, without dashes.
    let flag: String
    let environment: String?
    let defaultValue: Value?
    /// The default as the reference shows it ("one per core", "unset: …").
    let defaultText: String
    let meaning: String
    let parse: @Sendable (String) -> Value?
    /// The values accepted, in words ("at least 1", "1 to 65535"), with their check; nil:
    /// whatever parses.
    let bounds: Bounds?

    struct Bounds: Sendable {
        let text: String
        let contains: @Sendable (Value) -> Bool
    }

    /// `meaning (env NAME, default …).`: the flag's help.
    var help: ArgumentHelp {
        var details: [String] = []
        if let environment { details.append("env \(environment)") }
        details.append("default \(defaultText)")
        if let bounds { details.append(bounds.text) }
        return ArgumentHelp("\(meaning) (\(details.joined(separator: ", "))).")
    }

    var name: NameSpecification { .customLong(flag) }

    /// The flag's value, else the environment's, else the default (nil when unset); a
    /// value outside the bounds is refused, naming the flag.
    func resolve(_ flagValue: Value?) throws -> Value? {
        let value = try given(flagValue)
        if let value, let bounds, !bounds.contains(value) {
            throw ValidationError("--\(flag) must be \(bounds.text), got \(value)")
        }
        return value
    }

    private func given(_ flagValue: Value?) throws -> Value? {
        if let flagValue { return flagValue }
        if let environment, let text = Environment.string(environment) {
            guard let value = parse(text) else {
                throw ValidationError("\(environment) must be \(Self.kind(of: Value.self)), got \(text)")
            }
            return value
        }
        return defaultValue
    }

    /// As `resolve`, for settings that always have a value.
    func value(_ flagValue: Value?) throws -> Value {
        guard let value = try resolve(flagValue) else { throw ValidationError("--\(flag) is required") }
        return value
    }

    static func kind(of type: Any.Type) -> String {
        switch type {
        case is Int.Type: return "a whole number"
        case is Double.Type: return "a number"
        case is Bool.Type: return "true or false"
        default: return "text"
        }
    }
}

extension Setting where Value == String {
    init(
        _ flag: String, env: String?, default value: String?, shown: String? = nil, accepting bounds: Bounds? = nil,
        _ meaning: String
    ) {
        self.init(
            flag: flag, environment: env, defaultValue: value, defaultText: shown ?? value.map { "`\($0)`" } ?? "unset",
            meaning: meaning, parse: { $0 }, bounds: bounds)
    }
}

extension Setting<String>.Bounds {
    /// A name that goes into Redis keys, key patterns and signed notes' origins as it is:
    /// no space, no `/`, `:`, `+` or glob character.
    static let name = Self(text: "1 to 63 letters, digits, `.`, `_` or `-`") { name in
        (1...63).contains(name.utf8.count)
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0))
            }
    }
}

extension Setting.Bounds where Value: Comparable {
    /// `atLeast` up to `atMost`, either open; nil when both are.
    static func between(_ atLeast: Value?, _ atMost: Value?, _ shown: (Value) -> String) -> Self? {
        switch (atLeast, atMost) {
        case (nil, nil): nil
        case (let low?, nil): Self(text: "at least \(shown(low))", contains: { $0 >= low })
        case (nil, let high?): Self(text: "at most \(shown(high))", contains: { $0 <= high })
        case (let low?, let high?): Self(text: "\(shown(low)) to \(shown(high))", contains: { $0 >= low && $0 <= high })
        }
    }
}

extension Setting where Value == Int {
    init(
        _ flag: String, env: String?, default value: Int?, shown: String? = nil, atLeast: Int? = nil,
        atMost: Int? = nil, _ meaning: String
    ) {
        self.init(
            flag: flag, environment: env, defaultValue: value, defaultText: shown ?? value.map { "`\($0)`" } ?? "unset",
            meaning: meaning, parse: { Int($0) }, bounds: .between(atLeast, atMost) { "\($0)" })
    }
}

extension Setting where Value == Double {
    init(
        _ flag: String, env: String?, default value: Double?, shown: String? = nil, atLeast: Double? = nil,
        atMost: Double? = nil, _ meaning: String
    ) {
        self.init(
            flag: flag, environment: env, defaultValue: value,
            defaultText: shown ?? value.map { "`\(Self.number($0))`" } ?? "unset",
            meaning: meaning, parse: { Double($0).flatMap { $0.isFinite ? $0 : nil } },
            bounds: .between(atLeast, atMost) { Self.number($0) })
    }

    static func number(_ value: Double) -> String { value.formatted(.number.grouping(.never)) }
}

/// A setting as the reference lists it.
struct SettingRow: Sendable {
    let flag: String
    let environment: String?
    let defaultText: String
    let meaning: String

    init<Value>(_ setting: Setting<Value>) {
        flag = setting.flag
        environment = setting.environment
        defaultText = setting.defaultText + (setting.bounds.map { " (\($0.text))" } ?? "")
        meaning = setting.meaning
    }

    init(flag: String, environment: String?, defaultText: String, meaning: String) {
        self.flag = flag
        self.environment = environment
        self.defaultText = defaultText
        self.meaning = meaning
    }
}

/// Every setting of `roboscope serve` (the other subcommands take the common ones).
enum Settings {
    // Common to every subcommand.
    static let databaseURL = Setting<String>(
        "database-url", env: "DATABASE_URL", default: "postgres://roboscope@127.0.0.1:55432/roboscope",
        "the event log and projections (all subcommands)")
    static let readDatabaseURL = Setting<String>(
        "read-database-url", env: "ROBOSCOPE_READ_DATABASE_URL", default: nil,
        shown: "unset: every read on the primary",
        """
        a standby (hot standby) for catch-up reads: changes-feed pages and WebSocket catch-ups go there when it \
        has every event of their topic that the primary has, else to the primary
        """
    )
    static let redisURL = Setting<String>(
        "redis-url", env: "REDIS_URL", default: "redis://127.0.0.1:56379/0",
        "presence and locks, `redis://[:password@]host[:port][/db]`")
    static let redisSentinels = Setting<String>(
        "redis-sentinels", env: "REDIS_SENTINELS", default: nil,
        """
        `host:port,...` of Redis Sentinels: the master is whichever they name for `--redis-master-name` (the \
        URL's password and database apply to it) ([high availability](operations.md#high-availability))
        """
    )
    static let redisMasterName = Setting<String>(
        "redis-master-name", env: "REDIS_MASTER_NAME", default: "roboscope",
        "the master's name in the Sentinels' configuration")
    static let schemaDirectory = Setting<String>(
        "schema-dir", env: "ROBOSCOPE_SCHEMA_DIR", default: nil,
        shown: "`./schema`, else next to the executable",
        "the SQL migrations (`migrations/`) and functions (`functions/`)")
    static let logLevel = Setting<String>(
        "log-level", env: "ROBOSCOPE_LOG_LEVEL", default: "info",
        "`trace` … `critical`; at `info` every request leaves one access line")
    static let logFormat = Setting<String>(
        "log-format", env: "ROBOSCOPE_LOG_FORMAT", default: "text",
        """
        `json`: one JSON object per line on standard error (`time`, `level`, `label`, `message`, `source`, and \
        every metadata key such as `request_id`, `method`, `path`, `status`, `duration_ms`)
        """
    )

    // serve
    static let role = Setting<String>(
        "role", env: "ROBOSCOPE_ROLE", default: "all", "`api`, `gateway` or `all` ([roles](#roles))")
    static let host = Setting<String>(
        "host", env: "ROBOSCOPE_HOST", default: "0.0.0.0", "listening address (HTTP and WebSocket)")
    static let httpPort = Setting<Int>(
        "http-port", env: "ROBOSCOPE_HTTP_PORT", default: 8080, atLeast: 1, atMost: 65535,
        "REST, probes, `/metrics` and `/console`")
    static let wsPort = Setting<Int>(
        "ws-port", env: "ROBOSCOPE_WS_PORT", default: 8081, atLeast: 1, atMost: 65535, "the WebSocket gateway")
    static let poolSize = Setting<Int>(
        "db-pool-size", env: "ROBOSCOPE_DB_POOL_SIZE", default: 16, atLeast: 1,
        """
        Postgres connections of an `api`/`all` process (a `gateway` process uses 1 for probes, plus one each for \
        its log tailer and its catch-up reader)
        """
    )
    static let statementTimeout = Setting<Double>(
        "db-statement-timeout", env: "ROBOSCOPE_DB_STATEMENT_TIMEOUT", default: 10, atLeast: 0.001,
        """
        seconds a request's statement (reads, writes, the changes feed) may run before Postgres cancels it (503 \
        with `Retry-After`)
        """
    )
    static let reportStatementTimeout = Setting<Double>(
        "report-timeout", env: "ROBOSCOPE_REPORT_TIMEOUT", default: 30, atLeast: 0.001,
        """
        seconds a report's statement (the audit trail, histories, `as_of` reads, integrity checks) may run on the \
        report pool before Postgres cancels it (503 with `Retry-After`)
        """
    )
    static let reportPoolSize = Setting<Int>(
        "report-pool-size", env: "ROBOSCOPE_REPORT_POOL_SIZE", default: 4, atLeast: 1,
        """
        Postgres connections of an `api`/`all` process for reports, apart from `--db-pool-size`, so that requests \
        never wait behind a report
        """
    )
    static let tenantDBShare = Setting<Double>(
        "tenant-db-share", env: "ROBOSCOPE_TENANT_DB_SHARE", default: nil,
        shown: "`0.5` with authentication on, `1` off",
        """
        the part of each pool's connections (requests, reports) one tenant's requests may hold at once, at least \
        one; the rest of its work waits in a fair queue, served round robin across tenants
        """
    )
    static let appendsAtOnce = Setting<Int>(
        "appends-at-once", env: "ROBOSCOPE_APPENDS_AT_ONCE", default: EventStore.defaultAppendsAtOnce, atLeast: 1,
        """
        appends of separate requests run at a time; requests arriving meanwhile are committed together, each with \
        its own outcome ([group commit](ordering.md#group-commit))
        """
    )
    static let redisPoolSize = Setting<Int>(
        "redis-pool-size", env: "ROBOSCOPE_REDIS_POOL_SIZE", default: 8, atLeast: 1, "Redis connections")
    static let bodyLimit = Setting<Int>(
        "body-limit", env: "ROBOSCOPE_BODY_LIMIT", default: 1 << 20, atLeast: 1024,
        "largest request body in bytes (413)")
    static let headerLimit = Setting<Int>(
        "header-limit", env: "ROBOSCOPE_HEADER_LIMIT", default: 16 << 10, atLeast: 1024,
        "largest request head in bytes (431)")
    static let idleTimeout = Setting<Int>(
        "idle-timeout", env: "ROBOSCOPE_IDLE_TIMEOUT", default: 30, atLeast: 1,
        """
        seconds a connection has to deliver a complete request head after opening or after its last response; \
        then it is closed (idle keep-alive, or a client trickling headers); also closes, without an answer, a \
        connection whose request body stops arriving for that long
        """
    )
    static let requestTimeout = Setting<Int>(
        "request-timeout", env: "ROBOSCOPE_REQUEST_TIMEOUT", default: 60, atLeast: 1,
        "seconds a request's whole body may take after its head, however it trickles (408, then close)")
    static let httpMaxConnections = Setting<Int>(
        "http-max-connections", env: "ROBOSCOPE_HTTP_MAX_CONNECTIONS", default: 10_000, atLeast: 1,
        "connections the HTTP port holds at once; past it a new connection is closed at once")
    static let httpMaxConnectionsPerClient = Setting<Int>(
        "http-max-connections-per-client", env: "ROBOSCOPE_HTTP_MAX_CONNECTIONS_PER_CLIENT", default: 256, atLeast: 1,
        "the same per client address (a trusted proxy's connections count in the total only)")
    static let tenantHeavyRequests = Setting<Int>(
        "tenant-heavy-requests", env: "ROBOSCOPE_TENANT_HEAVY_REQUESTS", default: nil,
        shown: "half the cores, at least 1, with authentication on; none off", atLeast: 1,
        """
        heavy requests (lists that may return over 1,000 rows, `as_of`, audit pages, histories, integrity checks, \
        bulks) one tenant runs at once; the rest wait in the tenant's line, up to 256, past it 429 (`limit`: \
        `tenant`)
        """
    )
    static let sendTimeout = Setting<Int>(
        "send-timeout", env: "ROBOSCOPE_SEND_TIMEOUT", default: 30, atLeast: 1,
        "seconds a client may take none of its answer's bytes while some wait; then the connection is closed")
    static let responseMemory = Setting<Int>(
        "response-memory", env: "ROBOSCOPE_RESPONSE_MEMORY", default: 256, atLeast: 1,
        """
        MiB of answers the process holds unsent at most; past it a new answer of more than 64 KiB to a `GET` is \
        refused with 503 `overloaded` and `Retry-After`
        """
    )
    static let opsPort = Setting<Int>(
        "ops-port", env: "ROBOSCOPE_OPS_PORT", default: nil, shown: "unset: none", atLeast: 1, atMost: 65535,
        """
        a second port serving `/healthz`, `/readyz` and `/metrics` only, with connection caps of its own, which \
        no client flood on the HTTP port reaches (point probes and scrapes at it)
        """
    )
    static let unauthenticatedRateLimit = Setting<Double>(
        "unauthenticated-rate-limit", env: "ROBOSCOPE_UNAUTHENTICATED_RATE_LIMIT", default: 20, atLeast: 0,
        """
        requests per second per client address whose token is refused (401), counted before token verification: \
        past it 429 without checking the token; `0`: off
        """
    )
    static let metricsMaxTenants = Setting<Int>(
        "metrics-max-tenants", env: "ROBOSCOPE_METRICS_MAX_TENANTS", default: 100, atLeast: 0,
        """
        tenants whose series (`roboscope_tenant_*`) carry their own `tenant` label, the first met first; the rest \
        are counted under `_other`
        """
    )
    static let logRefusalsPerSecond = Setting<Int>(
        "log-refusals-per-second", env: "ROBOSCOPE_LOG_REFUSALS_PER_SECOND", default: 20, atLeast: 1,
        """
        lines a second the gateway logs about refused upgrades and 4xxx closes; past it one line a second counts \
        those left out
        """
    )
    static let tenantPlansFile = Setting<String>(
        "tenant-plans-file", env: "ROBOSCOPE_TENANT_PLANS_FILE", default: nil, shown: "unset: the flags for everyone",
        """
        each tenant's limits (`rate_limit`, `max_connections`, `max_long_polls`, `db_share`): `{\"default\": \
        {...}, \"tenants\": {\"acme\": {...}}}`, field by field the tenant's, else the default's, else the \
        flags'; re-read when it changes ([running many customers](#running-many-customers))
        """
    )
    static let signingKeyFile = Setting<String>(
        "signing-key-file", env: "ROBOSCOPE_SIGNING_KEY_FILE", default: nil,
        shown: "unset: nothing is signed (verifiers report every event)",
        """
        the history key, a 32-byte Ed25519 seed in base64 (`roboscope keygen`): it signs every append and each \
        tenant's checkpoints, and never enters the database \
        ([verifiable history](investigations.md#proving-the-history))
        """
    )
    static let deploymentName = Setting<String>(
        "deployment-name", env: "ROBOSCOPE_DEPLOYMENT_NAME", default: "local", accepting: .name,
        """
        names the history key (`roboscope/<name>`), each tenant's log (`roboscope/<name>/<tenant>`) and the \
        gateways' connection directory in Redis: deployments that share a Redis need distinct names
        """)
    static let checkpointInterval = Setting<Double>(
        "checkpoint-interval", env: "ROBOSCOPE_CHECKPOINT_INTERVAL", default: 1,
        "seconds between a tenant's signed checkpoints while its log grows (api role)")
    static let otelEndpoint = Setting<String>(
        "otel-endpoint", env: "OTEL_EXPORTER_OTLP_ENDPOINT", default: nil,
        shown: "unset: no traces are exported",
        """
        the OpenTelemetry collector's OTLP/HTTP base URL, such as `http://otel-collector:4318`: each request, \
        database job, append and delivery becomes a span exported there; swift-otel reads the other `OTEL_*` \
        variables ([tracing](#tracing))
        """
    )
    static let shutdownTimeout = Setting<Int>(
        "shutdown-timeout", env: "ROBOSCOPE_SHUTDOWN_TIMEOUT", default: 25, atLeast: 1,
        "seconds SIGTERM waits for in-flight work before cancelling it")
    static let rateLimit = Setting<Double>(
        "rate-limit", env: "ROBOSCOPE_RATE_LIMIT", default: 100, shown: "`100`",
        """
        requests per second per subject on `/api/v1` (per client address with authentication off), weighted by \
        cost; `0`: off ([rate limit](#rate-limit))
        """
    )
    static let rateBurst = Setting<Double>(
        "rate-burst", env: "ROBOSCOPE_RATE_BURST", default: nil, shown: "twice the rate", "bucket size")
    static let tenantRateLimit = Setting<Double>(
        "tenant-rate-limit", env: "ROBOSCOPE_TENANT_RATE_LIMIT", default: 1000,
        "the same per tenant, all its subjects together, with authentication on (bursts of twice as many); `0`: off")
    static let presenceWindow = Setting<Int>(
        "presence-window", env: "ROBOSCOPE_PRESENCE_WINDOW", default: 30, atLeast: 1, atMost: 3600,
        "seconds a heartbeat keeps a user present")
    static let presenceMaxUsers = Setting<Int>(
        "presence-max-users", env: "ROBOSCOPE_PRESENCE_MAX_USERS", default: 1000, atLeast: 1, atMost: 1_000_000,
        "present users one work session may hold; a heartbeat of one more gets 429 / `error` `presence_full`")
    static let realtimeURL = Setting<String>(
        "realtime-url", env: "ROBOSCOPE_REALTIME_URL", default: nil,
        shown: "unset: `ws://<the request's host>:<ws port>/api/v1/ws`",
        "the WebSocket URL `GET /api/v1/realtime` names (deployments behind an ingress or a proxy)")
    static let allowedHosts = Setting<String>(
        "allowed-hosts", env: "ROBOSCOPE_ALLOWED_HOSTS", default: nil,
        shown: "`localhost,127.0.0.1,[::1]`",
        """
        hosts a request's `Host` may name for the same-host realtime URL; any other gets the first ([browsers and \
        proxies](#browsers-and-proxies))
        """
    )
    static let allowedOrigins = Setting<String>(
        "allowed-origins", env: "ROBOSCOPE_ALLOWED_ORIGINS", default: nil, shown: "unset: same origin only",
        """
        browser origins (`https://app.example.com`, comma-separated, or `*`) that may write and open WebSockets; \
        requests without `Origin` (native clients) are not concerned
        """
    )
    static let trustedProxies = Setting<String>(
        "trusted-proxies", env: "ROBOSCOPE_TRUSTED_PROXIES", default: nil, shown: "unset: none",
        """
        CIDRs (`10.0.0.0/8,::1`) of proxies whose `X-Forwarded-For` names the client address (audit trail, rate \
        limits)
        """
    )
    static let consoleDirectory = Setting<String>(
        "console-dir", env: "ROBOSCOPE_CONSOLE_DIR", default: nil,
        shown: "`./console`, else next to the executable", "the investigations console's files")
    static let idempotencyRetention = Setting<Int>(
        "idempotency-retention", env: "ROBOSCOPE_IDEMPOTENCY_RETENTION", default: 86_400, atLeast: 1,
        """
        seconds the answer of a write with an `Idempotency-Key` is kept for retries; the api role purges older \
        ones every half retention (at most hourly)
        """
    )
    static let changesReadAhead = Setting<Int>(
        "changes-read-ahead", env: "ROBOSCOPE_CHANGES_READ_AHEAD", default: 16, atLeast: 0,
        "pages of the changes feed read ahead for clients catching up, kept in memory (up to about 1 MB each; 0: none)")
    static let changesMaxWaiting = Setting<Int>(
        "changes-max-waiting", env: "ROBOSCOPE_CHANGES_MAX_WAITING", default: 10_000, atLeast: 1,
        "long polls of the changes feed (`wait`) waiting at once in this process; past it 503 with `Retry-After`")
    static let changesMaxWaitingPerTenant = Setting<Int>(
        "changes-max-waiting-per-tenant", env: "ROBOSCOPE_CHANGES_MAX_WAITING_PER_TENANT",
        default: nil, shown: "a quarter of `--changes-max-waiting`", atLeast: 1,
        "the same per tenant, all its subjects together, with authentication on; past it 429 (`limit`: `tenant`)")
    static let changesMaxWaitingPerSubject = Setting<Int>(
        "changes-max-waiting-per-subject", env: "ROBOSCOPE_CHANGES_MAX_WAITING_PER_SUBJECT",
        default: 100, atLeast: 1, "the same per subject (`tenant/sub`); past it 429")
    static let authJWTSecret = Setting<String>(
        "auth-jwt-secret", env: "ROBOSCOPE_AUTH_JWT_SECRET", default: nil,
        "HS256 secret, 32 bytes at least ([authentication](#authentication))")
    static let authTokensFile = Setting<String>(
        "auth-tokens-file", env: "ROBOSCOPE_AUTH_TOKENS_FILE", default: nil,
        "static API tokens file, each token with `subject`, `tenant`, `scope` and optional `spaces`")
    static let authJWKSFile = Setting<String>(
        "auth-jwks-file", env: "ROBOSCOPE_AUTH_JWKS_FILE", default: nil,
        "a JWK Set (ES256, RS256, EdDSA public keys; `kid` picks the key), re-read when it changes")
    static let authJWKSURL = Setting<String>(
        "auth-jwks-url", env: "ROBOSCOPE_AUTH_JWKS_URL", default: nil,
        """
        a JWK Set's URL (an identity provider's `jwks_uri`), fetched at start, every `--auth-jwks-refresh` \
        seconds, and on an unknown `kid` at most once per 30 s
        """
    )
    static let authJWKSRefresh = Setting<Int>(
        "auth-jwks-refresh", env: "ROBOSCOPE_AUTH_JWKS_REFRESH", default: 300, atLeast: 1,
        "seconds between fetches of `--auth-jwks-url`")
    static let authTenantClaim = Setting<String>(
        "auth-tenant-claim", env: "ROBOSCOPE_AUTH_TENANT_CLAIM", default: "tenant",
        "the JWT claim naming the principal's tenant (for example `org_id`)")
    static let authLeeway = Setting<Int>(
        "auth-leeway", env: "ROBOSCOPE_AUTH_LEEWAY", default: 60, atLeast: 0, atMost: 3600,
        "seconds of clock skew allowed on `exp` and `nbf`")
    static let authAudience = Setting<String>(
        "auth-audience", env: "ROBOSCOPE_AUTH_AUDIENCE", default: nil,
        "a JWT's `aud` must name it; required with JWT verification unless `--auth-allow-any-audience`")
    static let authIssuer = Setting<String>(
        "auth-issuer", env: "ROBOSCOPE_AUTH_ISSUER", default: nil,
        "a JWT's `iss` must equal it; required with JWT verification unless `--auth-allow-any-issuer`")
    static let authIssuersFile = Setting<String>(
        "auth-issuers-file", env: "ROBOSCOPE_AUTH_ISSUERS_FILE", default: nil,
        """
        the trusted identity providers, one entry each (its `issuer`, `audience`, `jwks_file` or `jwks_url`, a \
        pinned `tenant` or a `tenant_claim`, `operator`), re-read when it changes; instead of the single-issuer \
        flags ([running many customers](#running-many-customers))
        """
    )
    static let serviceRole = Setting<String>(
        "service-role", env: "ROBOSCOPE_SERVICE_ROLE", default: nil, shown: "unset: grant nothing",
        """
        `migrate` grants this role what serving needs and no more: read the event log and append to it only \
        through `eventlog.append`, never `INSERT`, `UPDATE`, `DELETE`, `TRUNCATE` or `ALTER` it \
        ([database roles](#database-roles))
        """
    )
    static let defaultTenant = Setting<String>(
        "default-tenant", env: "ROBOSCOPE_DEFAULT_TENANT", default: "default",
        "the one tenant without authentication; `migrate` gives it the data stored before tenancy existed")

    // The gateway.
    static let wsThreads = Setting<Int>(
        "ws-threads", env: "ROBOSCOPE_WS_THREADS", default: nil, shown: "one per core", atLeast: 1, atMost: 64,
        "gateway event loops")
    static let wsMaxMessage = Setting<Int>(
        "ws-max-message", env: "ROBOSCOPE_WS_MAX_MESSAGE", default: 1 << 20, atLeast: 125, atMost: 1 << 30,
        "largest client message in bytes (1009)")
    static let wsMaxBuffered = Setting<Int>(
        "ws-max-buffered", env: "ROBOSCOPE_WS_MAX_BUFFERED", default: 4 << 20, atLeast: 1024,
        "bytes queued for one client before it is closed as too slow (1013)")
    static let wsPingInterval = Setting<Double>(
        "ws-ping-interval", env: "ROBOSCOPE_WS_PING_INTERVAL", default: 30, atLeast: 0.1, atMost: 3600,
        "seconds of silence before a ping; as long again without an answer closes")
    static let wsMaxConnections = Setting<Int>(
        "ws-max-connections-per-client", env: "ROBOSCOPE_WS_MAX_CONNECTIONS_PER_CLIENT",
        default: 1000, atLeast: 1, "connections one address may hold (429 on the upgrade)")
    static let wsMaxSubscriptions = Setting<Int>(
        "ws-max-subscriptions", env: "ROBOSCOPE_WS_MAX_SUBSCRIPTIONS", default: 100, atLeast: 1, atMost: 10_000,
        "subscriptions per connection")
    static let wsMaxPendingSubscribes = Setting<Int>(
        "ws-max-pending-subscribes", env: "ROBOSCOPE_WS_MAX_PENDING_SUBSCRIBES", default: 4, atLeast: 1, atMost: 100,
        """
        subscriptions of one connection waiting for their answer at once, unsubscribed ones included until the \
        gateway gets to them; the next `subscribe` gets `rate_limited`
        """
    )
    static let wsMaxPresence = Setting<Int>(
        "ws-max-presence", env: "ROBOSCOPE_WS_MAX_PRESENCE", default: 16, atLeast: 1, atMost: 10_000,
        """
        `presence` ops one connection may hold (work sessions; with authentication off, session and user pairs); \
        past it `error` `too_many_presences`
        """
    )
    static let wsOpRate = Setting<Double>(
        "ws-op-rate", env: "ROBOSCOPE_WS_OP_RATE", default: 20, atLeast: 0.1,
        """
        client ops (`subscribe`, `unsubscribe`, `presence`, `auth`) per second on one connection, bursts of twice \
        as many; past it `error` `rate_limited`
        """
    )
    static let wsSubjectOpRate = Setting<Double>(
        "ws-subject-op-rate", env: "ROBOSCOPE_WS_SUBJECT_OP_RATE", default: 100, atLeast: 0.1,
        """
        the same per subject (`tenant/sub`) across all its connections, with authentication on; a `since` \
        catch-up costs an op per 100 events
        """
    )
    static let wsTenantOpRate = Setting<Double>(
        "ws-tenant-op-rate", env: "ROBOSCOPE_WS_TENANT_OP_RATE", default: 1000, atLeast: 0.1,
        "the same per tenant, all its subjects together")
    static let wsMaxCatchUp = Setting<Int>(
        "ws-max-catch-up", env: "ROBOSCOPE_WS_MAX_CATCH_UP", default: 10_000, atLeast: 1,
        "events a subscription's `since` may replay; beyond, `too_far_behind` names the changes feed")
    static let wsDeflate = Setting<String>(
        "ws-deflate", env: "ROBOSCOPE_WS_DEFLATE", default: "on",
        "`on` or `off`: permessage-deflate for clients that offer it ([compression](websocket.md#compression))")
    static let wsDeflateWindowBits = Setting<Int>(
        "ws-deflate-window-bits", env: "ROBOSCOPE_WS_DEFLATE_WINDOW_BITS", default: 15, atLeast: 9, atMost: 15,
        """
        largest LZ77 window of permessage-deflate, 9 to 15 (the server's, and the client's when its offer lets us \
        bound it)
        """
    )
    static let wsPresenceGrace = Setting<Double>(
        "ws-presence-grace", env: "ROBOSCOPE_WS_PRESENCE_GRACE", default: 5, atLeast: 0, atMost: 600,
        "seconds a WebSocket presence outlives its connection")

    /// The reference's rows, in its order (flags without a value are listed too).
    static let reference: [SettingRow] = [
        SettingRow(databaseURL), SettingRow(readDatabaseURL), SettingRow(redisURL), SettingRow(redisSentinels),
        SettingRow(redisMasterName), SettingRow(schemaDirectory), SettingRow(logLevel), SettingRow(logFormat),
        SettingRow(role),
        SettingRow(
            flag: "no-migrate", environment: "ROBOSCOPE_MIGRATE=false", defaultText: "migrate at start",
            meaning: "skip applying migrations at start (a Job runs `roboscope migrate`)"),
        SettingRow(host), SettingRow(httpPort), SettingRow(wsPort), SettingRow(poolSize), SettingRow(statementTimeout),
        SettingRow(reportStatementTimeout), SettingRow(reportPoolSize), SettingRow(tenantDBShare),
        SettingRow(tenantHeavyRequests), SettingRow(appendsAtOnce), SettingRow(redisPoolSize),
        SettingRow(bodyLimit), SettingRow(headerLimit), SettingRow(idleTimeout), SettingRow(requestTimeout),
        SettingRow(httpMaxConnections), SettingRow(httpMaxConnectionsPerClient), SettingRow(sendTimeout),
        SettingRow(responseMemory), SettingRow(opsPort), SettingRow(metricsMaxTenants),
        SettingRow(logRefusalsPerSecond),
        SettingRow(tenantPlansFile),
        SettingRow(signingKeyFile), SettingRow(deploymentName), SettingRow(checkpointInterval),
        SettingRow(otelEndpoint), SettingRow(shutdownTimeout),
        SettingRow(rateLimit), SettingRow(rateBurst), SettingRow(tenantRateLimit), SettingRow(unauthenticatedRateLimit),
        SettingRow(presenceWindow), SettingRow(presenceMaxUsers), SettingRow(realtimeURL), SettingRow(allowedHosts),
        SettingRow(allowedOrigins), SettingRow(trustedProxies), SettingRow(consoleDirectory),
        SettingRow(idempotencyRetention), SettingRow(changesReadAhead), SettingRow(changesMaxWaiting),
        SettingRow(changesMaxWaitingPerTenant), SettingRow(changesMaxWaitingPerSubject), SettingRow(authJWTSecret),
        SettingRow(authTokensFile), SettingRow(authJWKSFile), SettingRow(authJWKSURL), SettingRow(authJWKSRefresh),
        SettingRow(authTenantClaim), SettingRow(authLeeway), SettingRow(authAudience), SettingRow(authIssuer),
        SettingRow(authIssuersFile),
        SettingRow(
            flag: "auth-allow-any-audience", environment: "ROBOSCOPE_AUTH_ALLOW_ANY_AUDIENCE=true",
            defaultText: "off", meaning: "accept JWTs whatever their `aud` (a warning at every start)"),
        SettingRow(
            flag: "auth-allow-any-issuer", environment: "ROBOSCOPE_AUTH_ALLOW_ANY_ISSUER=true",
            defaultText: "off", meaning: "accept JWTs whatever their `iss` (a warning at every start)"),
        SettingRow(defaultTenant), SettingRow(serviceRole),
        SettingRow(wsThreads), SettingRow(wsMaxMessage), SettingRow(wsMaxBuffered), SettingRow(wsPingInterval),
        SettingRow(wsMaxConnections), SettingRow(wsMaxSubscriptions), SettingRow(wsMaxPendingSubscribes),
        SettingRow(wsMaxPresence), SettingRow(wsOpRate), SettingRow(wsSubjectOpRate), SettingRow(wsTenantOpRate),
        SettingRow(wsMaxCatchUp), SettingRow(wsPresenceGrace), SettingRow(wsDeflate), SettingRow(wsDeflateWindowBits),
        SettingRow(
            flag: "ws-echo", environment: nil, defaultText: "off",
            meaning: "serve `/api/v1/ws/echo` (conformance runs only)"),
        SettingRow(
            flag: "reuse-port", environment: "ROBOSCOPE_REUSE_PORT=true", defaultText: "off",
            meaning:
                "let several gateway processes listen on `--ws-port` (`SO_REUSEPORT`), each with its own `--http-port` "
                + "([scaling out](#scaling-out))"),
    ]

    /// The configuration reference of docs/operations.md.
    static func markdown() -> String {
        var lines = ["| flag | environment | default | meaning |", "| --- | --- | --- | --- |"]
        for row in reference {
            lines.append(
                "| `--\(row.flag)` | \(row.environment.map { "`\($0)`" } ?? "") | \(row.defaultText) | \(row.meaning) |"
            )
        }
        return lines.joined(separator: "\n")
    }
}

/// `roboscope settings`: prints the configuration reference (docs/operations.md holds
/// it between markers; a test keeps the two equal).
struct PrintSettings: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Print every setting of serve: flag, environment variable, default, meaning (Markdown).",
        shouldDisplay: false
    )

    func run() {
        print(Settings.markdown())
    }
}
