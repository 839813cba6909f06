import Hummingbird
import Logging
import Prometheus
import RoboscopeMetrics
import RoboscopePostgres

/// Builds the HTTP application: every route under `/api/v1`, health at the root.
public enum APIServer {
    public static func router(
        services: APIServices, metrics: PrometheusCollectorRegistry? = nil
    ) -> Router<RoboscopeRequestContext> {
        let router = Router(context: RoboscopeRequestContext.self)
        // Outermost: the span covers everything the request costs, named by its route.
        // Each request a span (continuing the caller's `traceparent`) when the process
        // exports traces: docs/operations.md, "Tracing".
        if SpanRecording.isOn { router.add(middleware: RequestSpanMiddleware()) }
        if let metrics {
            // Request count and latency by route and status (hummingbird's middleware).
            router.add(middleware: MetricsMiddleware())
            MetricsController(registry: metrics).addRoutes(to: router)
        }
        // Outside the error middleware: error answers compress too.
        router.add(middleware: ResponseCompressionMiddleware(minimumSize: 1024))
        // Outside the error middleware: its access-log line names the client.
        router.add(middleware: ClientAddressMiddleware(proxies: services.trustedProxies))
        router.add(middleware: ErrorMiddleware(tenantMetrics: .shared))
        HealthController(services: services).addRoutes(to: router)
        // Probes and scrapes name whatever host the orchestrator dials; the rest, with
        // authentication off, only the hosts allowed (DNS rebinding).
        let guarded =
            services.authentication == nil
            ? router.group().add(middleware: AllowedHostGuard(hosts: services.realtime.allowedHosts)) : router.group()
        if let console = services.console {
            ConsoleController(assets: console).addRoutes(to: guarded)
        }
        let api = guarded.group("api/v1")
        api.add(middleware: CrossSiteWriteGuard(origins: services.allowedOrigins))
        api.add(
            middleware: PrincipalMiddleware(
                verifier: services.authentication, defaultTenant: services.defaultTenant,
                refusals: services.budgets.refusedTokens
            ))
        // After the principal: limits are per subject and tenant (per address without tokens).
        if services.budgets.isLimiting {
            api.add(middleware: RateLimitMiddleware(budgets: services.budgets))
        }
        // After the rate limit: a refused request never waits for its tenant's turn.
        if let heavy = services.heavyRequests {
            api.add(middleware: HeavyRequestMiddleware(share: heavy))
        }
        // Large answers wait for memory to send them in (reads only: a write's answer is
        // never refused after its change is made).
        api.add(middleware: AnswerBudgetMiddleware(memory: services.limits.answers))
        // Before anything reads a body; after the rate limit, which charges for it.
        api.add(middleware: RequestDecompressionMiddleware(bodyLimit: services.bodyLimit))
        api.add(middleware: IdempotencyMiddleware(keys: services.idempotency, bodyLimit: services.bodyLimit))
        APIRoutes.add(to: api, services: services)
        return router
    }

    /// `/healthz`, `/readyz` and `/metrics` only: the HTTP side of a gateway-only process.
    public static func probes(
        services: APIServices, host: String, port: Int, metrics: PrometheusCollectorRegistry, logger: Logger,
        limits: HTTPLimits? = nil
    ) -> some ApplicationProtocol {
        let router = Router(context: RoboscopeRequestContext.self)
        MetricsController(registry: metrics).addRoutes(to: router)
        router.add(middleware: ErrorMiddleware(tenantMetrics: nil))
        HealthController(services: services).addRoutes(to: router)
        return Application(
            router: router,
            server: (limits ?? services.limits).server,
            configuration: .init(address: .hostname(host, port: port), serverName: "roboscope"),
            logger: logger
        )
    }

    public static func application(
        services: APIServices, host: String, port: Int, metrics: PrometheusCollectorRegistry? = nil, logger: Logger
    ) -> some ApplicationProtocol {
        Application(
            router: router(services: services, metrics: metrics),
            server: services.limits.server,
            configuration: .init(address: .hostname(host, port: port), serverName: "roboscope"),
            logger: logger
        )
    }
}
