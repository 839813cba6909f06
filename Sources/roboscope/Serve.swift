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

    @Option(name: Settings.role.name, help: Settings.role.help)
    var roleFlag: ServeRole?

    func role() throws -> ServeRole {
        if let roleFlag { return roleFlag }
        let text = try Settings.role.value(nil)
        guard let role = ServeRole(rawValue: text) else {
            throw ValidationError("ROBOSCOPE_ROLE must be api, gateway or all")
        }
        return role
    }

    @Flag(
        name: .customLong("no-migrate"),
        help:
            """
            Do not apply pending migrations at start (env ROBOSCOPE_MIGRATE=false); for deployments where a job \
            runs `roboscope migrate`.
            """
    )
    var noMigrateFlag = false

    func migratesAtStart() -> Bool {
        !noMigrateFlag && Environment.string("ROBOSCOPE_MIGRATE")?.lowercased() != "false"
    }

    @Option(name: Settings.host.name, help: Settings.host.help) var hostFlag: String?
    @Option(name: Settings.httpPort.name, help: Settings.httpPort.help) var httpPortFlag: Int?
    @Option(name: Settings.wsPort.name, help: Settings.wsPort.help) var wsPortFlag: Int?
    @Option(name: Settings.poolSize.name, help: Settings.poolSize.help) var poolSizeFlag: Int?
    @Option(name: Settings.statementTimeout.name, help: Settings.statementTimeout.help) var statementTimeoutFlag:
        Double?
    @Option(name: Settings.reportStatementTimeout.name, help: Settings.reportStatementTimeout.help)
    var reportStatementTimeoutFlag: Double?
    @Option(name: Settings.reportPoolSize.name, help: Settings.reportPoolSize.help) var reportPoolSizeFlag: Int?
    @Option(name: Settings.tenantDBShare.name, help: Settings.tenantDBShare.help) var tenantDBShareFlag: Double?
    @Option(name: Settings.tenantHeavyRequests.name, help: Settings.tenantHeavyRequests.help)
    var tenantHeavyRequestsFlag: Int?
    @Option(name: Settings.appendsAtOnce.name, help: Settings.appendsAtOnce.help) var appendsAtOnceFlag: Int?
    @Option(name: Settings.redisPoolSize.name, help: Settings.redisPoolSize.help) var redisPoolSizeFlag: Int?
    @Option(name: Settings.redisSentinels.name, help: Settings.redisSentinels.help) var redisSentinelsFlag: String?
    @Option(name: Settings.redisMasterName.name, help: Settings.redisMasterName.help) var redisMasterNameFlag: String?
    @Option(name: Settings.bodyLimit.name, help: Settings.bodyLimit.help) var bodyLimitFlag: Int?
    @Option(name: Settings.headerLimit.name, help: Settings.headerLimit.help) var headerLimitFlag: Int?
    @Option(name: Settings.idleTimeout.name, help: Settings.idleTimeout.help) var idleTimeoutFlag: Int?
    @Option(name: Settings.requestTimeout.name, help: Settings.requestTimeout.help) var requestTimeoutFlag: Int?
    @Option(name: Settings.shutdownTimeout.name, help: Settings.shutdownTimeout.help) var shutdownTimeoutFlag: Int?
    @Option(name: Settings.tenantPlansFile.name, help: Settings.tenantPlansFile.help) var tenantPlansFileFlag: String?
    @Option(name: Settings.signingKeyFile.name, help: Settings.signingKeyFile.help) var signingKeyFileFlag: String?
    @Option(name: Settings.deploymentName.name, help: Settings.deploymentName.help) var deploymentNameFlag: String?
    @Option(name: Settings.otelEndpoint.name, help: Settings.otelEndpoint.help) var otelEndpointFlag: String?
    @Option(name: Settings.checkpointInterval.name, help: Settings.checkpointInterval.help)
    var checkpointIntervalFlag: Double?
    @Option(name: Settings.metricsMaxTenants.name, help: Settings.metricsMaxTenants.help) var metricsMaxTenantsFlag:
        Int?
    @Option(name: Settings.logRefusalsPerSecond.name, help: Settings.logRefusalsPerSecond.help)
    var logRefusalsPerSecondFlag: Int?
    @Option(name: Settings.rateLimit.name, help: Settings.rateLimit.help) var rateLimitFlag: Double?
    @Option(name: Settings.rateBurst.name, help: Settings.rateBurst.help) var rateBurstFlag: Double?
    @Option(name: Settings.tenantRateLimit.name, help: Settings.tenantRateLimit.help) var tenantRateLimitFlag: Double?
    @Option(name: Settings.unauthenticatedRateLimit.name, help: Settings.unauthenticatedRateLimit.help)
    var unauthenticatedRateLimitFlag: Double?
    @Option(name: Settings.httpMaxConnections.name, help: Settings.httpMaxConnections.help)
    var httpMaxConnectionsFlag: Int?
    @Option(name: Settings.httpMaxConnectionsPerClient.name, help: Settings.httpMaxConnectionsPerClient.help)
    var httpMaxConnectionsPerClientFlag: Int?
    @Option(name: Settings.sendTimeout.name, help: Settings.sendTimeout.help) var sendTimeoutFlag: Int?
    @Option(name: Settings.responseMemory.name, help: Settings.responseMemory.help) var responseMemoryFlag: Int?
    @Option(name: Settings.opsPort.name, help: Settings.opsPort.help) var opsPortFlag: Int?
    @Option(name: Settings.presenceWindow.name, help: Settings.presenceWindow.help) var presenceWindowFlag: Int?
    @Option(name: Settings.presenceMaxUsers.name, help: Settings.presenceMaxUsers.help) var presenceMaxUsersFlag: Int?
    @Option(name: Settings.realtimeURL.name, help: Settings.realtimeURL.help) var realtimeURLFlag: String?
    @Option(name: Settings.readDatabaseURL.name, help: Settings.readDatabaseURL.help) var readDatabaseURLFlag: String?
    @Option(name: Settings.allowedHosts.name, help: Settings.allowedHosts.help) var allowedHostsFlag: String?
    @Option(name: Settings.allowedOrigins.name, help: Settings.allowedOrigins.help) var allowedOriginsFlag: String?
    @Option(name: Settings.trustedProxies.name, help: Settings.trustedProxies.help) var trustedProxiesFlag: String?
    @Option(name: Settings.serviceRole.name, help: Settings.serviceRole.help) var serviceRoleFlag: String?
    @Option(name: Settings.consoleDirectory.name, help: Settings.consoleDirectory.help) var consoleDirectory: String?
    @Option(name: Settings.idempotencyRetention.name, help: Settings.idempotencyRetention.help)
    var idempotencyRetentionFlag: Int?
    @Option(name: Settings.changesReadAhead.name, help: Settings.changesReadAhead.help) var changesReadAheadFlag: Int?
    @Option(name: Settings.changesMaxWaiting.name, help: Settings.changesMaxWaiting.help) var changesMaxWaitingFlag:
        Int?
    @Option(name: Settings.changesMaxWaitingPerSubject.name, help: Settings.changesMaxWaitingPerSubject.help)
    var changesMaxWaitingPerSubjectFlag: Int?
    @Option(name: Settings.changesMaxWaitingPerTenant.name, help: Settings.changesMaxWaitingPerTenant.help)
    var changesMaxWaitingPerTenantFlag: Int?

    func limits() throws -> HTTPLimits {
        HTTPLimits(
            body: try Settings.bodyLimit.value(bodyLimitFlag),
            header: try Settings.headerLimit.value(headerLimitFlag),
            idleTimeout: .seconds(try Settings.idleTimeout.value(idleTimeoutFlag)),
            requestTimeout: .seconds(try Settings.requestTimeout.value(requestTimeoutFlag)),
            connections: ConnectionCaps(
                maxConnections: try Settings.httpMaxConnections.value(httpMaxConnectionsFlag),
                maxPerClient: try Settings.httpMaxConnectionsPerClient.value(httpMaxConnectionsPerClientFlag),
                proxies: try trustedProxies()
            ),
            sendTimeout: .seconds(try Settings.sendTimeout.value(sendTimeoutFlag)),
            answers: AnswerMemory(budget: try Settings.responseMemory.value(responseMemoryFlag) << 20)
        )
    }

    func opsPort() throws -> Int? { try Settings.opsPort.resolve(opsPortFlag) }

    func shutdownTimeout() throws -> Int { try Settings.shutdownTimeout.value(shutdownTimeoutFlag) }

    func rateLimits() throws -> RateLimits {
        let rate = try Settings.rateLimit.value(rateLimitFlag)
        let tenant = try Settings.tenantRateLimit.value(tenantRateLimitFlag)
        let unauthenticated = try Settings.unauthenticatedRateLimit.value(unauthenticatedRateLimitFlag)
        return RateLimits(
            perClient: rate > 0 ? (rate, try Settings.rateBurst.resolve(rateBurstFlag) ?? rate * 2) : nil,
            perTenant: tenant > 0 ? (tenant, max(1, tenant * 2)) : nil,
            unauthenticated: unauthenticated > 0 ? (unauthenticated, max(1, unauthenticated * 2)) : nil)
    }

    func presenceWindow() throws -> Int { try Settings.presenceWindow.value(presenceWindowFlag) }
    func presenceMaxUsers() throws -> Int { try Settings.presenceMaxUsers.value(presenceMaxUsersFlag) }
    func realtimeURL() throws -> String? { try Settings.realtimeURL.resolve(realtimeURLFlag) }
    func readDatabaseURL() throws -> String? { try Settings.readDatabaseURL.resolve(readDatabaseURLFlag) }
    func allowedHosts() throws -> HostAllowList {
        HostAllowList(try allowedHostNames())
    }
    func allowedHostNames() throws -> [String] {
        (try Settings.allowedHosts.resolve(allowedHostsFlag) ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
    }

    func allowedOrigins() throws -> OriginPolicy {
        switch OriginPolicy.parse(try Settings.allowedOrigins.resolve(allowedOriginsFlag) ?? "") {
        case .success(let policy): return policy
        case .failure(let invalid):
            throw ValidationError(
                "--allowed-origins: \(invalid.entry) is not an origin (scheme://host[:port], http or https) or *")
        }
    }

    func trustedProxies() throws -> TrustedProxies {
        switch TrustedProxies.parse(try Settings.trustedProxies.resolve(trustedProxiesFlag) ?? "") {
        case .success(let proxies): return proxies
        case .failure(let invalid):
            throw ValidationError("--trusted-proxies: \(invalid.entry) is not an address or a CIDR")
        }
    }

    func idempotencyRetention() throws -> Int { try Settings.idempotencyRetention.value(idempotencyRetentionFlag) }
    func changesReadAhead() throws -> Int { try Settings.changesReadAhead.value(changesReadAheadFlag) }
    func maxWaitingPolls() throws -> (process: Int, perTenant: Int?, perSubject: Int) {
        (
            try Settings.changesMaxWaiting.value(changesMaxWaitingFlag),
            try Settings.changesMaxWaitingPerTenant.resolve(changesMaxWaitingPerTenantFlag),
            try Settings.changesMaxWaitingPerSubject.value(changesMaxWaitingPerSubjectFlag)
        )
    }
    func httpPort() throws -> Int { try Settings.httpPort.value(httpPortFlag) }
    func metricsMaxTenants() throws -> Int { try Settings.metricsMaxTenants.value(metricsMaxTenantsFlag) }
    func logRefusalsPerSecond() throws -> Int { try Settings.logRefusalsPerSecond.value(logRefusalsPerSecondFlag) }
    func wsPort() throws -> Int { try Settings.wsPort.value(wsPortFlag) }
    func poolSize() throws -> Int { try Settings.poolSize.value(poolSizeFlag) }
    func reportPoolSize() throws -> Int { try Settings.reportPoolSize.value(reportPoolSizeFlag) }
    /// With authentication off there is one tenant: no bound unless one is set.
    func tenantHeavyRequests() throws -> Int? {
        let set = try Settings.tenantHeavyRequests.resolve(tenantHeavyRequestsFlag)
        return set ?? (auth.isOn ? max(1, ProcessInfo.processInfo.activeProcessorCount / 2) : nil)
    }

    /// With authentication off every request is the one tenant's: its share is the whole pool.
    func tenantDBShare() throws -> Double {
        try Settings.tenantDBShare.resolve(tenantDBShareFlag) ?? (auth.isOn ? 0.5 : 1)
    }
    func statementTimeouts() throws -> (requests: Duration, reports: Duration) {
        (
            .milliseconds(Int64(try Settings.statementTimeout.value(statementTimeoutFlag) * 1000)),
            .milliseconds(Int64(try Settings.reportStatementTimeout.value(reportStatementTimeoutFlag) * 1000))
        )
    }
    func appendsAtOnce() throws -> Int { try Settings.appendsAtOnce.value(appendsAtOnceFlag) }

    /// The history key (`--signing-key-file`), nil when unset.
    func historySigner() throws -> HistorySigner? {
        guard let path = try Settings.signingKeyFile.resolve(signingKeyFileFlag) else { return nil }
        return try HistoryKeyFile.signer(
            path: path, deployment: try Settings.deploymentName.value(deploymentNameFlag))
    }

    func checkpointInterval() throws -> Duration {
        let seconds = try Settings.checkpointInterval.value(checkpointIntervalFlag)
        guard seconds >= 0.01, seconds <= 3600 else {
            throw ValidationError("--checkpoint-interval must be 0.01 to 3600 seconds")
        }
        return .milliseconds(Int64(seconds * 1000))
    }
    func redisPoolSize() throws -> Int { try Settings.redisPoolSize.value(redisPoolSizeFlag) }

    /// `--redis-url`, or the Sentinels' master when `--redis-sentinels` names them.
    func redisEndpoint() throws -> RedisEndpoint {
        guard let url = RedisURL(common.redisURL) else {
            throw ValidationError("--redis-url must look like redis://[:password@]host[:port][/db]")
        }
        guard let listed = try Settings.redisSentinels.resolve(redisSentinelsFlag) else {
            return RedisEndpoint(url: url)
        }
        guard let sentinels = RedisAddress.list(listed) else {
            throw ValidationError("--redis-sentinels must be host:port[,host:port...]")
        }
        let name = try Settings.redisMasterName.value(redisMasterNameFlag)
        guard !name.isEmpty, !name.contains(" ") else {
            throw ValidationError("--redis-master-name must be a name without spaces")
        }
        return RedisEndpoint(url: url, sentinels: sentinels, masterName: name)
    }

    func validate() throws {
        _ = try redisEndpoint()
        // Each of these refuses a value outside its setting's bounds (Settings), naming the flag.
        _ = try (presenceWindow(), presenceMaxUsers(), httpPort(), wsPort(), poolSize(), statementTimeouts())
        _ = try (reportPoolSize(), tenantHeavyRequests(), appendsAtOnce(), redisPoolSize(), limits(), opsPort())
        _ = try Settings.unauthenticatedRateLimit.value(unauthenticatedRateLimitFlag)
        _ = try (metricsMaxTenants(), logRefusalsPerSecond(), shutdownTimeout(), idempotencyRetention())
        _ = try (changesReadAhead(), maxWaitingPolls(), Settings.deploymentName.value(deploymentNameFlag))
        guard try tenantDBShare() > 0, try tenantDBShare() <= 1 else {
            throw ValidationError("--tenant-db-share must be more than 0 and at most 1")
        }
        if let path = try Settings.tenantPlansFile.resolve(tenantPlansFileFlag) {
            do { _ = try PlansFile.read(path) } catch { throw ValidationError("--tenant-plans-file: \(error)") }
        }
        if let url = try realtimeURL(), !(url.hasPrefix("ws://") || url.hasPrefix("wss://")) {
            throw ValidationError("--realtime-url must be a ws:// or wss:// URL")
        }
        _ = try role()
        _ = try allowedOrigins()
        _ = try trustedProxies()
        for host in try allowedHostNames() where host.contains(where: { "/@?# ".contains($0) }) {
            throw ValidationError("--allowed-hosts: \(host) is not a host name")
        }
        let rates = try rateLimits()
        if let limit = rates.perClient, limit.rate < 0.1 || limit.burst < 1 {
            throw ValidationError(
                "--rate-limit must be 0 (off) or at least 0.1 per second, and --rate-burst at least 1")
        }
        if let limit = rates.perTenant, limit.rate < 0.1 {
            throw ValidationError("--tenant-rate-limit must be 0 (off) or at least 0.1 per second")
        }
    }

    func run() async throws {
        let logger = common.logger("roboscope")
        if migratesAtStart() {
            _ = try await common.migrate(
                Migrator(
                    directory: try common.schemaURL(), logger: logger, legacyTenant: try auth.defaultTenant(),
                    serviceRole: try Settings.serviceRole.resolve(serviceRoleFlag)),
                timeout: .seconds(60), logger: logger)
        }
        let role = try role()
        let metrics = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))
        TenantMetrics.shared.labels.setLimit(try metricsMaxTenants())
        let redisEndpoint = try redisEndpoint()
        let redis = RedisPool(endpoint: redisEndpoint, size: try redisPoolSize(), logger: logger)
        let presence = PresenceStore(
            redis: redis, window: .seconds(try presenceWindow()), maxUsers: try presenceMaxUsers())
        let databases = try databases(role, logger: logger)
        // The group stops its services in reverse order: the pools, first here, stop
        // last, once nothing is left to queue work on them.
        var services: [any Service] = [redis] + databases.services
        // The flag, as swift-otel reads it: from the environment.
        if let endpoint = otelEndpointFlag { setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint, 1) }
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
        let signer = try historySigner()
        services += try checkpointing(signer, role: role, redis: redisEndpoint, logger: logger)
        var api = APIServices(
            store: EventStore(
                pool: databases.pool, notifier: notifier, appendsAtOnce: try appendsAtOnce(), signer: signer),
            reads: ReadModels(pool: databases.pool), audit: AuditReader(pool: databases.reports),
            timeTravel: TimeTravel(pool: databases.reports),
            presence: presence, locks: LockStore(redis: redis), limits: try limits()
        )
        api.standby = databases.standby
        api.deploymentName = try Settings.deploymentName.value(deploymentNameFlag)
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
            url: common.databaseURL, signer: signer, deployment: try Settings.deploymentName.value(deploymentNameFlag),
            interval: try checkpointInterval(), witness: RedisCheckpointWitness(endpoint: redis), logger: logger)
        return [BackgroundThread(start: { checkpointer.start() }, stop: { await checkpointer.stop() })]
    }

    private func gatewayService(
        verifier: TokenVerifier?, databases: Databases, redis: RedisEndpoint, presence: PresenceStore, logger: Logger
    ) throws -> Gateway {
        var configuration = try gateway.configuration(
            host: try Settings.host.value(hostFlag), port: try wsPort(), presenceWindow: try presenceWindow())
        configuration.authentication = verifier
        configuration.defaultTenant = try auth.defaultTenant()
        configuration.allowedOrigins = try allowedOrigins()
        configuration.allowedHosts = try allowedHosts()
        configuration.trustedProxies = try trustedProxies()
        configuration.presenceMaxUsers = try presenceMaxUsers()
        configuration.readDatabaseURL = databases.standbyURL
        configuration.logRefusalsPerSecond = try logRefusalsPerSecond()
        configuration.plans = databases.plans
        configuration.deploymentName = try Settings.deploymentName.value(deploymentNameFlag)
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
        lifecycle.maximumGracefulShutdownDuration = .seconds(try shutdownTimeout())
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
        let timeouts = try statementTimeouts()
        let share = try tenantDBShare()
        let plansFile = try Settings.tenantPlansFile.resolve(tenantPlansFileFlag).map {
            try PlansFile(path: $0, logger: logger)
        }
        let plans = plansFile?.plans
        let standbyURL = try readDatabaseURL()
        return Databases(
            pool: PostgresPool(
                url: common.databaseURL, size: role.runsAPI ? try poolSize() : 1, statementTimeout: timeouts.requests,
                tenantShare: share, plans: plans, logger: logger),
            reports: PostgresPool(
                url: common.databaseURL, size: role.runsAPI ? try reportPoolSize() : 1,
                statementTimeout: timeouts.reports, tenantShare: share, plans: plans, name: "postgres_reports",
                logger: logger),
            standby: role.runsAPI
                ? try standbyURL.map {
                    PostgresPool(
                        url: $0, size: try poolSize(), statementTimeout: timeouts.requests, tenantShare: share,
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
        api.rateLimits = try rateLimits()
        api.plans = plans
        api.heavyRequests = try tenantHeavyRequests().map { HeavyRequestShare(perTenant: $0) }
        api.realtime = RealtimeSettings(url: try realtimeURL(), port: try wsPort(), allowedHosts: try allowedHosts())
        api.allowedOrigins = try allowedOrigins()
        api.trustedProxies = try trustedProxies()
        guard role.runsAPI else { return }
        if let folder = ConsoleAssets.locate(explicit: try Settings.consoleDirectory.resolve(consoleDirectory)) {
            api.console = try ConsoleAssets(directory: folder)
        } else {
            logger.warning("no console/ folder found: GET /console is not served (pass --console-dir)")
        }
        api.maxWaitingPolls = try maxWaitingPolls()
        api.changesReadAhead = ChangesReadAhead(capacity: try changesReadAhead())
    }

    /// The HTTP side: the API with what serves it (or, gateway-only, the probes), and the
    /// probes' own port if set.
    private func servers(
        _ role: ServeRole, api given: APIServices, changes: ChangeSignal, notifier: AppendNotifier,
        metrics: PrometheusCollectorRegistry, logger: Logger
    ) throws -> [any Service] {
        var api = given
        var services: [any Service] = []
        let host = try Settings.host.value(hostFlag)
        let port = try httpPort()
        if role.runsAPI {
            api.changes = changes
            let listener = ChangeListener(url: common.databaseURL, signal: changes, logger: logger)
            // Listed before the API server: they stop after its last request.
            services.append(BackgroundThread(start: { notifier.start() }, stop: { await notifier.stop() }))
            services.append(BackgroundThread(start: { listener.start() }, stop: { await listener.stop() }))
            let retention = try idempotencyRetention()
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
        if let ops = try opsPort() {
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
