import ArgumentParser
import Foundation
import RoboscopeAuth
import RoboscopeDomain
import RoboscopeGateway
import RoboscopeHTTP
import RoboscopePostgres
import RoboscopeProofs
import RoboscopeRedis

/// The flags of `serve` that are neither every command's (`CommonOptions`), the
/// gateway's nor authentication's, each resolved and checked against its `Setting`.
struct ServeOptions: ParsableArguments {
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
    @Option(name: Settings.consoleDirectory.name, help: Settings.consoleDirectory.help) var consoleDirectoryFlag:
        String?
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
    func tenantHeavyRequests(authenticated: Bool) throws -> Int? {
        let set = try Settings.tenantHeavyRequests.resolve(tenantHeavyRequestsFlag)
        return set ?? (authenticated ? max(1, ProcessInfo.processInfo.activeProcessorCount / 2) : nil)
    }

    /// With authentication off every request is the one tenant's: its share is the whole pool.
    func tenantDBShare(authenticated: Bool) throws -> Double {
        try Settings.tenantDBShare.resolve(tenantDBShareFlag) ?? (authenticated ? 0.5 : 1)
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
            path: path, deployment: try deploymentName())
    }

    func checkpointInterval() throws -> Duration {
        let seconds = try Settings.checkpointInterval.value(checkpointIntervalFlag)
        guard seconds >= 0.01, seconds <= 3600 else {
            throw ValidationError("--checkpoint-interval must be 0.01 to 3600 seconds")
        }
        return .milliseconds(Int64(seconds * 1000))
    }
    func redisPoolSize() throws -> Int { try Settings.redisPoolSize.value(redisPoolSizeFlag) }

    /// `--redis-url` (`redisURL`), or the Sentinels' master when `--redis-sentinels` names them.
    func redisEndpoint(redisURL: String) throws -> RedisEndpoint {
        guard let url = RedisURL(redisURL) else {
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

    func host() throws -> String { try Settings.host.value(hostFlag) }
    func deploymentName() throws -> String { try Settings.deploymentName.value(deploymentNameFlag) }
    func tenantPlansFile() throws -> String? { try Settings.tenantPlansFile.resolve(tenantPlansFileFlag) }
    func consoleDirectory() throws -> String? { try Settings.consoleDirectory.resolve(consoleDirectoryFlag) }
    func serviceRole() throws -> String? { try Settings.serviceRole.resolve(serviceRoleFlag) }

    func validate() throws {
        // Each of these refuses a value outside its setting's bounds (Settings), naming the flag.
        _ = try (presenceWindow(), presenceMaxUsers(), httpPort(), wsPort(), poolSize(), statementTimeouts())
        _ = try (
            reportPoolSize(), tenantHeavyRequests(authenticated: true), appendsAtOnce(), redisPoolSize(), limits(),
            opsPort()
        )
        _ = try Settings.unauthenticatedRateLimit.value(unauthenticatedRateLimitFlag)
        _ = try (metricsMaxTenants(), logRefusalsPerSecond(), shutdownTimeout(), idempotencyRetention())
        _ = try (changesReadAhead(), maxWaitingPolls(), deploymentName())
        let share = try tenantDBShare(authenticated: true)
        guard share > 0, share <= 1 else {
            throw ValidationError("--tenant-db-share must be more than 0 and at most 1")
        }
        if let path = try tenantPlansFile() {
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
}
