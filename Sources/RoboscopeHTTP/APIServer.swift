import Hummingbird
import Logging
import RoboscopePostgres

/// Builds the HTTP application: every route under `/api/v1`, health at the root.
public enum APIServer {
    public static func router(services: APIServices) -> Router<RoboscopeRequestContext> {
        let router = Router(context: RoboscopeRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        HealthController(services: services).addRoutes(to: router)
        let api = router.group("api/v1")
        SpacesController(services: services).addRoutes(to: api)
        WorkSessionsController(services: services).addRoutes(to: api)
        MarkersController(services: services).addRoutes(to: api)
        MarkerDetailsController(services: services).addRoutes(to: api)
        PresenceController(services: services).addRoutes(to: api)
        LocksController(services: services).addRoutes(to: api)
        AuditController(services: services).addRoutes(to: api)
        return router
    }

    public static func application(
        services: APIServices, host: String, port: Int, logger: Logger
    ) -> some ApplicationProtocol {
        Application(
            router: router(services: services),
            configuration: .init(address: .hostname(host, port: port), serverName: "roboscope"),
            logger: logger
        )
    }
}
