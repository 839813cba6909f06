import Hummingbird
import RoboscopeDomain
import RoboscopePostgres
import RoboscopeProofs
import RoboscopeRedis

/// `GET /integrity?work_session_id=|space_id=`: recomputes the hash chain of every stream
/// of a work session or a space and names the first broken link, so that an investigator
/// sees tampering without shell access (the console shows it). Without either, the whole
/// log: an operator's check (a full scan; with authentication on, it takes a read-write
/// token).
struct IntegrityController {
    let services: APIServices

    func check(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        let session = try input.queryID("work_session_id")
        let space = try input.queryID("space_id")
        let scope: HashChain.Scope
        let name: String
        switch (session, space) {
        case (let id?, nil): (scope, name) = (.workSession(id), "work_session:\(id)")
        case (nil, let id?): (scope, name) = (.space(id), "space:\(id)")
        case (nil, nil):
            try services.gate.require(.operator, context)
            (scope, name) = (.wholeLog, "log")
        case (_?, _?):
            throw DomainError(
                .malformedRequest, "query space_id: give work_session_id or space_id, not both", field: "space_id")
        }
        let unknown = DomainError(.notFound, "\(name) has no events: no such work session or space")
        if let topic = Topic(name) {
            try await services.gate.require(.audit, on: topic, context, otherwise: unknown)
        }
        let checker = IntegrityChecker(pool: services.audit.pool)
        let budgets = services.budgets
        let verifier = services.store.signer?.verifier
        let history = services.history
        let redis = services.locks.redis
        let deployment = services.deploymentName
        let tenant = context.principal.tenant
        return try await CancelOnClose.run(request) {
            let report = try await checker.check(scope)
            var signatures: SignatureCheck.Report?
            if let verifier { signatures = try await checker.signatures(scope, verifier: verifier) }
            // A scan costs its size: a token per 100 events read, as every report.
            budgets.charge(context, rows: Int(report.checkedEvents))
            if scope != .wholeLog, report.checkedEvents == 0 {
                throw unknown
            }
            let link = report.brokenLink.map { link -> JSONValue in
                .object([
                    "position": .integer(link.position), "stream_type": .string(link.streamType),
                    "stream_id": .string(link.streamID),
                    "version": .integer(link.version), "problem": .string(link.problem),
                ])
            }
            let invalid = signatures.map { report -> JSONValue in
                .object([
                    "checked_appends": .integer(report.appends), "invalid_events": .integer(report.invalidEvents),
                    "first_invalid": report.first.map { problem -> JSONValue in
                        .object([
                            "position": problem.position.map { .integer($0) } ?? .null,
                            "tenant_seq": problem.tenantSeq.map { .integer($0) } ?? .null,
                            "problem": .string(problem.problem),
                        ])
                    } ?? .null,
                ])
            }
            // A database rolled back to an earlier backup: the checkpoints Redis saw signed
            // are not in its tree (the whole log: every tenant's; else the caller's).
            var rollback: String?
            if verifier != nil {
                for tenant in scope == .wholeLog ? try await history.tenants() : [tenant] {
                    let origin = Checkpoint.origin(deployment: deployment, tenant: tenant)
                    let reply = try await redis.command(["GET", RedisCheckpointWitness.key(origin: origin)])
                    guard let witnessed = RedisCheckpointWitness.parse(reply),
                        let problem = try await history.problem(tenant: tenant, witnessed: witnessed)
                    else { continue }
                    rollback = "\(tenant): \(problem)"
                    break
                }
            }
            let signed = (signatures?.invalidEvents ?? 0) == 0 && rollback == nil
            return JSONResponse.make(
                JSONValue.object([
                    "scope": .string(name), "intact": .bool(report.brokenLink == nil && signed),
                    "signatures": invalid ?? .null, "history": rollback.map { .string($0) } ?? .null,
                    "checked_events": .integer(report.checkedEvents),
                    "streams": .integer(report.streams), "first_broken_link": link ?? .null,
                    "checked_at": .string(WallClock.now().formatted(.wire)),
                ]))
        }
    }
}
