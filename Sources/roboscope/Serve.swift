import ArgumentParser
import Hummingbird
import Logging
import Metrics
import Prometheus
import RoboscopeMetrics
import Foundation
import RoboscopeAuth
import RoboscopeDomain
import RoboscopeGateway
import RoboscopeHTTP
import RoboscopePostgres
import RoboscopeProofs
import RoboscopeRedis
import ServiceLifecycle

/// `roboscope serve`: applies pending migrations, then serves the HTTP API and the
/// WebSocket gateway (or one of them, `--role`) until SIGTERM.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Migrate (unless --no-migrate), then serve the API and the gateway until SIGTERM or SIGINT.")

    @OptionGroup var common: CommonOptions
    @OptionGroup var gateway: GatewayOptions
    @OptionGroup var auth: AuthOptions
    @OptionGroup var options: ServeOptions

    /// What takes more than one group of flags: the Redis endpoint is `--redis-url`'s
    /// (every command's) or the Sentinels' (`serve`'s).
    func validate() throws {
        _ = try options.redisEndpoint(redisURL: common.redisURL)
    }

    func run() async throws {
        let logger = common.logger("roboscope")
        if options.migratesAtStart() {
            _ = try await common.migrate(
                Migrator(
                    directory: try common.schemaURL(), logger: logger, legacyTenant: try auth.defaultTenant(),
                    serviceRole: try options.serviceRole()),
                timeout: .seconds(60), logger: logger)
        }
        let role = try options.role()
        let metrics = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))
        TenantMetrics.shared.labels.setLimit(try options.metricsMaxTenants())
        let redisEndpoint = try options.redisEndpoint(redisURL: common.redisURL)
        let redis = RedisPool(endpoint: redisEndpoint, size: try options.redisPoolSize(), logger: logger)
        let presence = PresenceStore(
            redis: redis, window: .seconds(try options.presenceWindow()), maxUsers: try options.presenceMaxUsers())
        let databases = try databases(role, logger: logger)
        // The group stops its services in reverse order: the pools, first here, stop
        // last, once nothing is left to queue work on them.
        var services: [any Service] = [redis] + databases.services
        // The flag, as swift-otel reads it: from the environment.
        if let endpoint = options.otelEndpointFlag { setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint, 1) }
        // Turns `SpanRecording` on, which the spans of every layer follow.
        if TracingSetup.isRequested(ProcessInfo.processInfo.environment) {
            services.insert(try TracingSetup.start(logger: logger), at: 0)
        }
        if redisEndpoint.usesSentinels {
            services.append(SentinelWatcher(endpoint: redisEndpoint, logger: logger))
        }
        let changes = ChangeSignal()
        // This process's long polls are woken by its own appends at once (API role only).
        let notifier = AppendNotifier(url: common.databaseURL, local: role.runsAPI ? changes : nil, logger: logger)
        let signer = try options.historySigner()
        services += try checkpointing(signer, role: role, redis: redisEndpoint, logger: logger)
        var api = APIServices(
            store: EventStore(
                pool: databases.pool, notifier: notifier, appendsAtOnce: try options.appendsAtOnce(), signer: signer),
            reads: ReadModels(pool: databases.pool), audit: AuditReader(pool: databases.reports),
            timeTravel: TimeTravel(pool: databases.reports),
            presence: presence, locks: LockStore(redis: redis), limits: try options.limits()
        )
        api.standby = databases.standby
        api.deploymentName = try options.deploymentName()
        // One verifier (one read of the tokens file and the JWK Set) for the API and the gateway.
        let verifier = try await authentication(into: &services, logger: logger)
        try configure(&api, verifier: verifier, plans: databases.plans, role: role, logger: logger)
        services += try servers(
            role, api: api, changes: changes, notifier: notifier, metrics: metrics, logger: logger)
        if role.runsGateway {
            services.append(
                try gatewayService(
                    verifier: verifier, databases: databases, redis: redisEndpoint, presence: presence, logger: logger))
        }
        try await runUntilSignalled(services, logger: logger)
        logger.info("stopped")
    }

    /// The checkpointer, when the process signs and serves the API: one per API process;
    /// several processes take turns per tenant (an advisory lock).
    private func checkpointing(
        _ signer: HistorySigner?, role: ServeRole, redis: RedisEndpoint, logger: Logger
    ) throws -> [any Service] {
        guard let signer else {
            logger.warning("no --signing-key-file: appends are not signed, and verifiers will report them")
            return []
        }
        guard role.runsAPI else { return [] }
        let checkpointer = Checkpointer(
            url: common.databaseURL, signer: signer,
            deployment: try options.deploymentName(),
            interval: try options.checkpointInterval(), witness: RedisCheckpointWitness(endpoint: redis), logger: logger
        )
        return [BackgroundThread(start: { checkpointer.start() }, stop: { await checkpointer.stop() })]
    }

    private func gatewayService(
        verifier: TokenVerifier?, databases: Databases, redis: RedisEndpoint, presence: PresenceStore, logger: Logger
    ) throws -> Gateway {
        var configuration = try gateway.configuration(
            host: try options.host(), port: try options.wsPort(),
            presenceWindow: try options.presenceWindow())
        configuration.authentication = verifier
        configuration.defaultTenant = try auth.defaultTenant()
        configuration.allowedOrigins = try options.allowedOrigins()
        configuration.allowedHosts = try options.allowedHosts()
        configuration.trustedProxies = try options.trustedProxies()
        configuration.presenceMaxUsers = try options.presenceMaxUsers()
        configuration.readDatabaseURL = databases.standbyURL
        configuration.logRefusalsPerSecond = try options.logRefusalsPerSecond()
        configuration.plans = databases.plans
        configuration.deploymentName = try options.deploymentName()
        return try Gateway(
            configuration: configuration, databaseURL: common.databaseURL, redis: redis, presence: presence,
            logger: logger)
    }

    /// The group owns SIGTERM and SIGINT: the API stops accepting and finishes in-flight
    /// requests, the gateway closes its sockets with 1001; past `--shutdown-timeout`,
    /// in-flight work is cancelled (an orchestrator's kill comes soon after).
    private func runUntilSignalled(_ services: [any Service], logger: Logger) async throws {
        var lifecycle = ServiceGroupConfiguration(
            services: services.map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        lifecycle.maximumGracefulShutdownDuration = .seconds(try options.shutdownTimeout())
        try await ServiceGroup(configuration: lifecycle).run()
    }

    /// The Postgres pools of this process and the tenants' plans they share by.
    struct Databases {
        let pool: PostgresPool
        /// The audit trail, histories, `as_of` reads and integrity scans: connections of
        /// their own, so that requests never wait behind a report, with a longer bound.
        let reports: PostgresPool
        /// Catch-up reads on a standby when it has caught up (docs/operations.md): the
        /// changes feed's pool here; a gateway's tailer keeps its own connection.
        let standby: PostgresPool?
        let standbyURL: String?
        let plansFile: PlansFile?
        var plans: TenantPlans? { plansFile?.plans }
        /// What the service group runs, in its order.
        var services: [any Service] {
            [pool, reports] + (plansFile.map { [$0] } ?? []) + (standby.map { [$0] } ?? [])
        }
    }

    private func databases(_ role: ServeRole, logger: Logger) throws -> Databases {
        let timeouts = try options.statementTimeouts()
        let share = try options.tenantDBShare(authenticated: auth.isOn)
        let plansFile = try options.tenantPlansFile().map {
            try PlansFile(path: $0, logger: logger)
        }
        let plans = plansFile?.plans
        let standbyURL = try options.readDatabaseURL()
        return Databases(
            pool: PostgresPool(
                url: common.databaseURL, size: role.runsAPI ? try options.poolSize() : 1,
                statementTimeout: timeouts.requests,
                tenantShare: share, plans: plans, logger: logger),
            reports: PostgresPool(
                url: common.databaseURL, size: role.runsAPI ? try options.reportPoolSize() : 1,
                statementTimeout: timeouts.reports, tenantShare: share, plans: plans, name: "postgres_reports",
                logger: logger),
            standby: role.runsAPI
                ? try standbyURL.map {
                    PostgresPool(
                        url: $0, size: try options.poolSize(), statementTimeout: timeouts.requests, tenantShare: share,
                        plans: plans, name: "postgres_standby", logger: logger)
                } : nil,
            standbyURL: standbyURL, plansFile: plansFile)
    }

    /// The token verifier, if authentication is on, and the services that keep it current
    /// (the JWK Set's refresh, the issuer's routes, the revocations from Postgres).
    private func authentication(into services: inout [any Service], logger: Logger) async throws -> TokenVerifier? {
        let authentication = try await auth.verifier(logger: logger)
        let verifier = authentication?.0
        if let verifier, let source = verifier.keySource {
            services.append(KeySetRefresh(source: source, verifier: verifier))
        }
        if let routes = authentication?.2 { services.append(routes) }
        if let verifier {
            // Revocations in force before the first request, then kept current from Postgres.
            let revocations = RevocationListener(url: common.databaseURL, logger: logger) { list in
                verifier.revocations.replace(with: list)
            }
            revocations.loadNow()
            services.append(BackgroundThread(start: { revocations.start() }, stop: { await revocations.stop() }))
        }
        return verifier
    }

    /// The API's settings that do not make a service.
    private func configure(
        _ api: inout APIServices, verifier: TokenVerifier?, plans: TenantPlans?, role: ServeRole, logger: Logger
    ) throws {
        api.authentication = verifier
        api.defaultTenant = try auth.defaultTenant()
        api.rateLimits = try options.rateLimits()
        api.plans = plans
        api.heavyRequests = try options.tenantHeavyRequests(authenticated: auth.isOn).map {
            HeavyRequestShare(perTenant: $0)
        }
        api.realtime = RealtimeSettings(
            url: try options.realtimeURL(), port: try options.wsPort(), allowedHosts: try options.allowedHosts())
        api.allowedOrigins = try options.allowedOrigins()
        api.trustedProxies = try options.trustedProxies()
        guard role.runsAPI else { return }
        if let folder = ConsoleAssets.locate(explicit: try options.consoleDirectory()) {
            api.console = try ConsoleAssets(directory: folder)
        } else {
            logger.warning("no console/ folder found: GET /console is not served (pass --console-dir)")
        }
        api.maxWaitingPolls = try options.maxWaitingPolls()
        api.changesReadAhead = ChangesReadAhead(capacity: try options.changesReadAhead())
    }

    /// The HTTP side: the API with what serves it (or, gateway-only, the probes), and the
    /// probes' own port if set.
    private func servers(
        _ role: ServeRole, api given: APIServices, changes: ChangeSignal, notifier: AppendNotifier,
        metrics: PrometheusCollectorRegistry, logger: Logger
    ) throws -> [any Service] {
        var api = given
        var services: [any Service] = []
        let host = try options.host()
        let port = try options.httpPort()
        if role.runsAPI {
            api.changes = changes
            let listener = ChangeListener(url: common.databaseURL, signal: changes, logger: logger)
            // Listed before the API server: they stop after its last request.
            services.append(BackgroundThread(start: { notifier.start() }, stop: { await notifier.stop() }))
            services.append(BackgroundThread(start: { listener.start() }, stop: { await listener.stop() }))
            let retention = try options.idempotencyRetention()
            services.append(
                IdempotencyPurge(
                    keys: api.idempotency, retention: .seconds(retention),
                    interval: .seconds(min(3600, max(1, retention / 2))),
                    clock: ContinuousClock(), logger: logger
                ))
            services.append(
                APIServer.application(services: api, host: host, port: port, metrics: metrics, logger: logger))
            logger.info("serving", metadata: ["http": "\(host):\(port)"])
        } else {
            // A gateway-only process still answers probes and scrapes on the HTTP port.
            services.append(APIServer.probes(services: api, host: host, port: port, metrics: metrics, logger: logger))
            logger.info("serving probes and metrics", metadata: ["http": "\(host):\(port)"])
        }
        if let ops = try options.opsPort() {
            // Probes and scrapes on a port of their own, with caps of their own.
            let caps = ConnectionCaps(maxConnections: 64, maxPerClient: 64, recordsMetrics: false)
            services.append(
                APIServer.probes(
                    services: api, host: host, port: ops, metrics: metrics, logger: logger,
                    limits: HTTPLimits(connections: caps, answers: api.limits.answers)))
            logger.info("serving probes and metrics", metadata: ["ops": "\(host):\(ops)"])
        }
        return services
    }
}
