import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// `/audit` and `/{spaces|work-sessions|markers}/{id}/history`: the log as an audit
/// trail, each entry with the fields its event changed (docs/investigations.md).
struct AuditController {
    let services: APIServices

    func audit(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        var query = try page(input)
        try services.gate.require(.audit, context)
        query.visible = Visibility(context.principal)
        query.spaceID = try input.queryID("space_id")
        query.workSessionID = try input.queryID("work_session_id")
        query.entityType = try input.queryEnum("entity_type", StreamType.self)
        query.entityID = try input.queryID("entity_id")
        if let actor = input.query("actor") {
            guard !actor.isEmpty, actor.count <= 200 else {
                throw DomainError(.malformedRequest, "query actor: must be 1 to 200 characters", field: "actor")
            }
            query.actor = actor
        }
        if let type = input.query("type") {
            guard EventType.all.contains(EventType(type)) else {
                let known = EventType.all.map(\.rawValue).joined(separator: ", ")
                throw DomainError(.malformedRequest, "query type: unknown event type; one of \(known)", field: "type")
            }
            query.type = type
        }
        query.from = try time(input, "from")
        query.to = try time(input, "to")
        if let from = query.from, let to = query.to, from >= to {
            throw DomainError(.malformedRequest, "query from: must be before to", field: "from")
        }
        return try await answer(query, request, context)
    }

    func history(_ request: Request, _ context: RoboscopeRequestContext, _ type: StreamType) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        var query = try page(input)
        query.entityType = type
        let id = try input.pathID()
        query.entityID = id
        let unknown = DomainError.notFound(type.spokenName, id)
        try await services.gate.require(.audit, on: StreamRef(type, id), context, otherwise: unknown)
        return try await answer(query, request, context, whenEmpty: unknown)
    }

    /// `query`'s page, read until the client goes and charged to the caller's row budget;
    /// `whenEmpty`: what a first page with no entries answers instead (an entity's history
    /// that has none is an unknown entity).
    private func answer(
        _ query: AuditQuery, _ request: Request, _ context: RoboscopeRequestContext, whenEmpty: DomainError? = nil
    ) async throws -> Response {
        let (audit, budgets) = (services.audit, services.budgets)
        return try await CancelOnClose.run(request) {
            let page = try await audit.page(query)
            budgets.charge(context, rows: page.entries.count)
            if let whenEmpty, page.entries.isEmpty, query.after == 0, query.before == nil { throw whenEmpty }
            return Self.answer(page)
        }
    }

    /// The page as `AuditPage` writes it, streamed past a MiB (a page of 1,000 entries
    /// with their changes can pass it).
    static func answer(_ page: AuditPage) -> Response {
        var tail = JSONWriter(timestampStyle: .wire, capacity: 64)
        page.writeCursors(to: &tail)
        return StreamedArray.response(
            page.entries, prefix: #"{"data":["#,
            suffix: Array("],".utf8) + tail.bytes + Array("}".utf8))
    }

    /// `order` (`asc`, the default, or `desc`), its cursor (`after` or `before`) and
    /// `limit`: how every audit listing pages.
    private func page(_ input: RequestInput) throws -> AuditQuery {
        var query = AuditQuery()
        switch input.query("order") {
        case nil, "asc": break
        case "desc": query.descending = true
        default: throw DomainError(.malformedRequest, "query order: expected asc or desc", field: "order")
        }
        if let text = input.query("before") {
            guard query.descending, let before = Int64(text), before >= 0 else {
                throw DomainError(.malformedRequest, "query before: a position, with order=desc", field: "before")
            }
            query.before = before
        }
        if let text = input.query("after") {
            guard !query.descending, let after = Int64(text), after >= 0 else {
                throw DomainError(
                    .malformedRequest, "query after: expected a position (0 or more), with order=asc", field: "after")
            }
            query.after = after
        }
        if let text = input.query("limit") {
            guard let limit = Int(text), (1...AuditQuery.maxLimit).contains(limit) else {
                throw DomainError(
                    .malformedRequest, "query limit: expected 1 to \(AuditQuery.maxLimit)", field: "limit")
            }
            query.limit = limit
        }
        return query
    }

    private func time(_ input: RequestInput, _ name: String) throws -> Timestamp? {
        guard let text = input.query(name) else { return nil }
        guard let time = Timestamp(rfc3339: text) else {
            throw DomainError(
                .malformedRequest, "query \(name): expected an RFC 3339 time such as 2026-11-22T14:32:00Z", field: name)
        }
        return time
    }
}
