import ArgumentParser
import Hummingbird
import Logging
import Metrics
import Prometheus
import RoboscopeGateway
import RoboscopeHTTP
import RoboscopePostgres
import RoboscopeRedis
import ServiceLifecycle

/// `roboscope serve`: applies pending migrations, then serves the HTTP API and the
/// WebSocket gateway (or one of them, `--role`) until SIGTERM.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Migrate (unless --no-migrate), then serve the API and the gateway until SIGTERM or SIGINT.")

    @OptionGroup var common: CommonOptions
    @OptionGroup var gateway: GatewayOptions
    @OptionGroup var auth: AuthOptions

    @Option(name: .customLong("role"), help: "api, gateway or all (env ROBOSCOPE_ROLE, default all).")
    var roleFlag: ServeRole?

    func role() throws -> ServeRole {
        if let roleFlag { return roleFlag }
        guard let text = Environment.string("ROBOSCOPE_ROLE") else { return .all }
        guard let role = ServeRole(rawValue: text) else { throw ValidationError("ROBOSCOPE_ROLE must be api, gateway or all") }
        return role
    }

    @Flag(name: .customLong("no-migrate"), help: "Do not apply pending migrations at start (env ROBOSCOPE_MIGRATE=false); for deployments where a job runs `roboscope migrate`.")
    var noMigrateFlag = false

    func migratesAtStart() -> Bool { !noMigrateFlag && Environment.string("ROBOSCOPE_MIGRATE")?.lowercased() != "false" }

    @Option(name: .customLong("host"), help: "Address to listen on (env ROBOSCOPE_HOST, default 0.0.0.0).")
    var hostFlag: String?

    @Option(name: .customLong("http-port"), help: "HTTP port (env ROBOSCOPE_HTTP_PORT, default 8080).")
    var httpPortFlag: Int?

    @Option(name: .customLong("ws-port"), help: "WebSocket gateway port (env ROBOSCOPE_WS_PORT, default 8081).")
    var wsPortFlag: Int?

    @Option(name: .customLong("db-pool-size"), help: "Postgres connections (env ROBOSCOPE_DB_POOL_SIZE, default 16).")
    var poolSizeFlag: Int?

    @Option(name: .customLong("body-limit"), help: "Largest request body in bytes (env ROBOSCOPE_BODY_LIMIT, default 1048576).")
    var bodyLimitFlag: Int?

    @Option(name: .customLong("header-limit"), help: "Largest request head in bytes (env ROBOSCOPE_HEADER_LIMIT, default 16384).")
    var headerLimitFlag: Int?

    @Option(name: .customLong("idle-timeout"), help: "Seconds a connection may take to send a request head (env ROBOSCOPE_IDLE_TIMEOUT, default 30).")
    var idleTimeoutFlag: Int?

    @Option(name: .customLong("request-timeout"), help: "Seconds a request body may take after its head (env ROBOSCOPE_REQUEST_TIMEOUT, default 60).")
    var requestTimeoutFlag: Int?

    @Option(name: .customLong("shutdown-timeout"), help: "Seconds SIGTERM waits for in-flight work before cancelling it (env ROBOSCOPE_SHUTDOWN_TIMEOUT, default 25).")
    var shutdownTimeoutFlag: Int?

    func limits() throws -> HTTPLimits {
        HTTPLimits(
            body: try bodyLimitFlag ?? Environment.int("ROBOSCOPE_BODY_LIMIT") ?? 1 << 20,
            header: try headerLimitFlag ?? Environment.int("ROBOSCOPE_HEADER_LIMIT") ?? 16 << 10,
            idleTimeout: .seconds(try idleTimeoutFlag ?? Environment.int("ROBOSCOPE_IDLE_TIMEOUT") ?? 30),
            requestTimeout: .seconds(try requestTimeoutFlag ?? Environment.int("ROBOSCOPE_REQUEST_TIMEOUT") ?? 60)
        )
    }

    func shutdownTimeout() throws -> Int { try shutdownTimeoutFlag ?? Environment.int("ROBOSCOPE_SHUTDOWN_TIMEOUT") ?? 25 }

    @Option(name: .customLong("rate-limit"), help: "Requests per second per client address on /api/v1, 0 for none (env ROBOSCOPE_RATE_LIMIT, default 0).")
    var rateLimitFlag: Double?

    @Option(name: .customLong("rate-burst"), help: "Burst above the rate (env ROBOSCOPE_RATE_BURST, default twice the rate).")
    var rateBurstFlag: Double?

    func rateLimit() throws -> (rate: Double, burst: Double)? {
        let rate = try rateLimitFlag ?? Environment.double("ROBOSCOPE_RATE_LIMIT") ?? 0
        guard rate > 0 else { return nil }
        return (rate, try rateBurstFlag ?? Environment.double("ROBOSCOPE_RATE_BURST") ?? rate * 2)
    }

    @Option(name: .customLong("presence-window"), help: "Seconds a heartbeat keeps a user present (env ROBOSCOPE_PRESENCE_WINDOW, default 30).")
    var presenceWindowFlag: Int?

    func presenceWindow() throws -> Int { try presenceWindowFlag ?? Environment.int("ROBOSCOPE_PRESENCE_WINDOW") ?? 30 }

    func validate() throws {
        guard RedisURL(common.redisURL) != nil else { throw ValidationError("--redis-url must look like redis://[:password@]host[:port][/db]") }
        guard (1...3600).contains(try presenceWindow()) else { throw ValidationError("--presence-window must be 1 to 3600 seconds") }
        for (name, port) in [("http-port", try httpPort()), ("ws-port", try wsPort())] where !(1...65535).contains(port) {
            throw ValidationError("--\(name) must be between 1 and 65535")
        }
        guard try poolSize() >= 1 else { throw ValidationError("--db-pool-size must be at least 1") }
        let limits = try limits()
        guard limits.body >= 1024 else { throw ValidationError("--body-limit must be at least 1024") }
        guard limits.header >= 1024 else { throw ValidationError("--header-limit must be at least 1024") }
        guard limits.idleTimeout >= .seconds(1), limits.requestTimeout >= .seconds(1) else {
            throw ValidationError("--idle-timeout and --request-timeout must be at least 1 second")
        }
        guard try shutdownTimeout() >= 1 else { throw ValidationError("--shutdown-timeout must be at least 1 second") }
        guard try idempotencyRetention() >= 1 else { throw ValidationError("--idempotency-retention must be at least 1 second") }
        if let url = realtimeURL(), !(url.hasPrefix("ws://") || url.hasPrefix("wss://")) {
            throw ValidationError("--realtime-url must be a ws:// or wss:// URL")
        }
        _ = try role()
        if let limit = try rateLimit(), limit.rate < 0.1 || limit.burst < 1 {
            throw ValidationError("--rate-limit must be at least 0.1 per second and --rate-burst at least 1")
        }
    }

    @Option(name: .customLong("realtime-url"), help: "The WebSocket URL GET /api/v1/realtime names, for deployments behind an ingress (env ROBOSCOPE_REALTIME_URL, default ws://<the request's host>:<ws port>/api/v1/ws).")
    var realtimeURLFlag: String?

    func realtimeURL() -> String? { realtimeURLFlag ?? Environment.string("ROBOSCOPE_REALTIME_URL") }

    @Option(name: .customLong("console-dir"), help: "The investigations console's files (env ROBOSCOPE_CONSOLE_DIR, default ./console, else next to the executable).")
    var consoleDirectory: String?

    @Option(name: .customLong("idempotency-retention"), help: "Seconds the answer of a write with an Idempotency-Key is kept for retries (env ROBOSCOPE_IDEMPOTENCY_RETENTION, default 86400).")
    var idempotencyRetentionFlag: Int?

    func idempotencyRetention() throws -> Int {
        try idempotencyRetentionFlag ?? Environment.int("ROBOSCOPE_IDEMPOTENCY_RETENTION") ?? 86_400
    }

    func httpPort() throws -> Int { try httpPortFlag ?? Environment.int("ROBOSCOPE_HTTP_PORT") ?? 8080 }
    func wsPort() throws -> Int { try wsPortFlag ?? Environment.int("ROBOSCOPE_WS_PORT") ?? 8081 }
    func poolSize() throws -> Int { try poolSizeFlag ?? Environment.int("ROBOSCOPE_DB_POOL_SIZE") ?? 16 }

    func run() async throws {
        let logger = common.logger("roboscope")
        if migratesAtStart() {
            let connection = try await common.connect(timeout: .seconds(60), logger: logger)
            try Migrator(directory: try common.schemaURL(), logger: logger).migrate(connection)
        }
        let role = try role()
        let metrics = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))
        let host = hostFlag ?? Environment.string("ROBOSCOPE_HOST") ?? "0.0.0.0"
        let redisURL = RedisURL(common.redisURL)!
        let redis = RedisPool(url: redisURL, size: 8, logger: logger)
        defer { redis.shutdown() }
        let presence = PresenceStore(redis: redis, window: .seconds(try presenceWindow()))
        var services: [any Service] = []

        let pool = PostgresPool(url: common.databaseURL, size: role.runsAPI ? try poolSize() : 1, logger: logger)
        defer { pool.shutdown() }
        let notifier = AppendNotifier(url: common.databaseURL, logger: logger)
        var api = APIServices(
            store: EventStore(pool: pool, notifier: notifier), reads: ReadModels(pool: pool), audit: AuditReader(pool: pool),
            timeTravel: TimeTravel(pool: pool),
            presence: presence, locks: LockStore(redis: redis), limits: try limits()
        )
        // One verifier (one read of the tokens file) for the API and the gateway.
        let verifier = try auth.verifier()
        api.authentication = verifier
        api.rateLimit = try rateLimit()
        api.realtime = RealtimeSettings(url: realtimeURL(), port: try wsPort())
        if role.runsAPI {
            if let folder = ConsoleAssets.locate(explicit: consoleDirectory) {
                api.console = try ConsoleAssets(directory: folder)
            } else {
                logger.warning("no console/ folder found: GET /console is not served (pass --console-dir)")
            }
        }
        let port = try httpPort()
        let changes = ChangeSignal()
        let listener = ChangeListener(url: common.databaseURL, signal: changes, logger: logger)
        defer { listener.shutdown() }
        if role.runsAPI {
            api.changes = changes
            notifier.local = changes
            notifier.start()
            listener.start()
            let retention = try idempotencyRetention()
            services.append(IdempotencyPurge(
                keys: api.idempotency, retention: .seconds(retention), interval: .seconds(min(3600, max(1, retention / 2))),
                clock: ContinuousClock(), logger: logger
            ))
            services.append(APIServer.application(services: api, host: host, port: port, metrics: metrics, logger: logger))
            logger.info("serving", metadata: ["http": "\(host):\(port)"])
        } else {
            // A gateway-only process still answers probes and scrapes on the HTTP port.
            services.append(APIServer.probes(services: api, host: host, port: port, metrics: metrics, logger: logger))
            logger.info("serving probes and metrics", metadata: ["http": "\(host):\(port)"])
        }
        defer { notifier.shutdown() }
        if role.runsGateway {
            var configuration = try gateway.configuration(host: host, port: try wsPort(), presenceWindow: try presenceWindow())
            configuration.authentication = verifier
            services.append(try Gateway(
                configuration: configuration, databaseURL: common.databaseURL, redisURL: redisURL,
                presence: presence, logger: logger
            ))
        }
        // The group owns SIGTERM and SIGINT: the API stops accepting and finishes
        // in-flight requests, the gateway closes its sockets with 1001.
        var lifecycle = ServiceGroupConfiguration(
            services: services.map { .init(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // Past this, in-flight work is cancelled: an orchestrator's kill comes soon after.
        lifecycle.maximumGracefulShutdownDuration = .seconds(try shutdownTimeout())
        let group = ServiceGroup(configuration: lifecycle)
        try await group.run()
        logger.info("stopped")
    }
}
