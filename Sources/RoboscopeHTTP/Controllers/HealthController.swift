import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// `/healthz`: the process answers. `/readyz`: it can also reach Postgres (503 if not).
struct HealthController {
    let services: APIServices

    func addRoutes(to router: Router<RoboscopeRequestContext>) {
        router.get("healthz") { _, _ in JSONResponse.make(JSONValue.object(["status": .string("ok")])) }
        router.get("readyz") { _, _ in
            do {
                _ = try await services.store.pool.withConnection { connection in
                    try connection.query("SELECT 1").rowCount
                }
            } catch {
                throw DomainError(.unavailable, "postgres is unreachable")
            }
            return JSONResponse.make(JSONValue.object(["status": .string("ready")]))
        }
    }
}
