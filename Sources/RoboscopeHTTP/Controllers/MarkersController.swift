import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// `/markers`: every marker returned carries its `details`.
struct MarkersController {
    let services: APIServices
    private var route: EntityRoute { EntityRoute(services: services, kind: .marker) }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = route.input(request, context)
        let sessionID = try input.queryID("work_session_id")
        let spaceID = try input.queryID("space_id")
        let parent: StreamRef
        switch (sessionID, spaceID) {
        case (let session?, nil): parent = StreamRef(.workSession, session)
        case (nil, let space?): parent = StreamRef(.space, space)
        case (nil, nil):
            throw DomainError(
                .malformedRequest, "query work_session_id or space_id: one is required", field: "work_session_id")
        case (_?, _?):
            throw DomainError(
                .malformedRequest, "query space_id: give work_session_id or space_id, not both", field: "space_id")
        }
        let moment = try input.asOf()
        if moment != nil, sessionID == nil {
            throw DomainError(.malformedRequest, "query as_of: reads of the past take work_session_id", field: "as_of")
        }
        let place = try MarkerPlaceQuery.place(input)
        let page = try Listing.page(input)
        if case .near? = place, page.after != nil {
            throw DomainError(
                .malformedRequest, "query after: a near query is ordered by distance and takes limit only",
                field: "after")
        }
        try services.gate.require(moment == nil ? .read : .audit, context)
        // A parent the principal may not see is read as the unknown id it is to it: the
        // same empty list, the same headers.
        let shown = try await services.gate.sees(parent, context) ? parent.id : EntityID.random()
        let scope: MarkerFilter.Scope = parent.type == .space ? .space(shown) : .workSession(shown)
        if let moment {
            let markers = try await services.timeTravel.markers(workSessionID: shown, asOf: moment)
            services.budgets.charge(context, rows: markers.count)
            return StreamedArray.response(markers)
        }
        let filter = MarkerFilter(
            scope: scope, place: place, page: Listing.probe(page), visible: Visibility(context.principal))
        guard case .workSession = scope else {
            let markers = try await services.reads.markers(filter)
            services.budgets.charge(context, rows: markers.count)
            return Listing.response(markers, page: page, request: request, id: \.marker.id)
        }
        // One work session's markers are a read of its topic.
        let snapshot = try await services.reads.markersSnapshot(filter)
        services.budgets.charge(context, rows: snapshot.value.count)
        return Listing.joined(Listing.response(snapshot.value, page: page, request: request, id: \.marker.id), snapshot)
    }

    func show(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try await route.show(
            route.input(request, context), context, asOf: services.timeTravel.marker, now: services.reads.markerSnapshot
        )
    }

    func create(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let body = try await route.input(request, context).fields()
        let session = try await place(try body.requiredID("work_session_id"), context)
        return try await refusingGone(session) {
            try await WriteRetry.once(store: services.store, context: context) {
                let (marker, batch) = try MarkerCommands.create(
                    body, session: session, RequestIdentity.commandContext(request, context))
                return (JSONResponse.answer(marker, status: .created), batch)
            }
        }
    }

    func bulkCreate(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let body = try await route.input(request, context).fields()
        guard case .array(let items)? = body.object["markers"] else {
            throw DomainError.invalid("markers", "expected an array of markers")
        }
        guard items.count <= Limits.bulkMarkers else {
            throw DomainError.invalid("markers", "at most \(Limits.bulkMarkers) markers in one request")
        }
        // A bulk costs its markers in the rate limit, as that many creates would.
        services.budgets.charge(context, cost: Double(items.count - 1))
        guard !items.isEmpty else { return JSONResponse.make([MarkerWithDetails](), status: .created) }
        guard let first = items.first?.objectValue, let sessionID = try FieldReader(first).id("work_session_id") else {
            throw DomainError.invalid("markers[0].work_session_id", "is required")
        }
        let field = "markers[0].work_session_id"
        let session = try await place(sessionID, field: field, context)
        return try await refusingGone(session, field: field) {
            try await WriteRetry.once(store: services.store, context: context) {
                let (markers, batch) = try MarkerCommands.bulkCreate(
                    items, session: session, RequestIdentity.commandContext(request, context))
                return (JSONResponse.answer(markers, status: .created), batch)
            }
        }
    }

    func update(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try await route.patch(request, context, .write, reading: ReadModels.requiredMarker) {
            found, body, expected, command in
            try MarkerCommands.update(found.0, session: found.1, body, expectedVersion: expected, command)
        }
    }

    func delete(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        try await route.delete(request, context, .write, reading: ReadModels.requiredMarker) {
            _, found, expected, command in
            try MarkerCommands.delete(found.0, session: found.1, expectedVersion: expected, command)
        }
    }

    /// The place of the session a create names; a session that does not exist is the
    /// request's error (422), not a missing resource.
    private func place(
        _ id: EntityID, field: String = "work_session_id", _ context: RoboscopeRequestContext
    ) async throws -> WorkSessionPlace {
        try await services.gate.require(
            .write, on: StreamRef(.workSession, id), context, otherwise: Self.noSession(id, field: field))
        guard let place = try await services.sessionPlaces.place(id) else { throw Self.noSession(id, field: field) }
        return place
    }

    /// A create whose session was deleted since its place was read: the append refuses it
    /// (the session is its one required stream), and the client hears what it would have
    /// from a fresh read.
    private func refusingGone(
        _ session: WorkSessionPlace, field: String = "work_session_id", _ write: () async throws -> Response
    ) async throws -> Response {
        do {
            return try await write()
        } catch let error as DomainError where error.code == .notFound {
            services.sessionPlaces.forget(session.id)
            throw Self.noSession(session.id, field: field)
        }
    }

    private static func noSession(_ id: EntityID, field: String) -> DomainError {
        DomainError(.invalidField, "\(field): work session \(id) does not exist", field: field)
    }
}
