import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// `GET /integrity?work_session_id=|space_id=`: recomputes the hash chain of every stream
/// of a work session or a space and names the first broken link, so that an investigator
/// sees tampering without shell access (the console shows it). Without either, the whole
/// log: an operator's check (a full scan; with authentication on, it takes a read-write
/// token).
struct IntegrityController {
    let services: APIServices

    func addRoutes(to group: RouterGroup<RoboscopeRequestContext>) {
        group.get("integrity", use: check)
    }

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
        return try await CancelOnClose.run(request) {
            let report = try await checker.check(scope)
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
            return JSONResponse.make(
                JSONValue.object([
                    "scope": .string(name), "intact": .bool(report.brokenLink == nil),
                    "checked_events": .integer(report.checkedEvents),
                    "streams": .integer(report.streams), "first_broken_link": link ?? .null,
                    "checked_at": .string(WallClock.now().formatted(.wire)),
                ]))
        }
    }
}
