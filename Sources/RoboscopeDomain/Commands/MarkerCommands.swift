/// Turns marker requests into events. Details are recomputed in the same batch
/// whenever the points change, so every response already carries them.
public enum MarkerCommands {
    public static func create(
        _ body: FieldReader, session: WorkSessionPlace, _ context: CommandContext
    ) throws -> (MarkerWithDetails, AppendBatch) {
        let (created, events) = try newMarker(body, session: session, context)
        let batch = AppendBatch(events: events, locks: parentLocks(session), requiredStreams: [sessionStream(session)])
        return (created, batch.guarded(by: session, context))
    }

    /// All or nothing: the first invalid marker fails the request, naming its index.
    public static func bulkCreate(
        _ items: [JSONValue], session: WorkSessionPlace, _ context: CommandContext
    ) throws -> ([MarkerWithDetails], AppendBatch) {
        var created: [MarkerWithDetails] = []
        var batch = AppendBatch(locks: parentLocks(session), requiredStreams: [sessionStream(session)])
        var seen = Set<EntityID>()
        for (index, item) in items.enumerated() {
            let prefix = "markers[\(index)]"
            do {
                let body = try FieldReader(body: item)
                if let sessionID = try body.id("work_session_id"), sessionID != session.id {
                    throw DomainError.invalid(
                        "work_session_id", "every marker of a bulk request belongs to the same work session")
                }
                let (marker, events) = try newMarker(body, session: session, context)
                guard seen.insert(marker.marker.id).inserted else {
                    throw DomainError.invalid("id", "repeats an earlier marker's id")
                }
                created.append(marker)
                batch.events += events
            } catch let error as DomainError {
                var nested = error.field == nil ? DomainError.invalid("body", error.message) : error
                nested = nested.nested(under: prefix)
                nested.details["index"] = .integer(Int64(index))
                throw nested
            }
        }
        return (created, batch.guarded(by: session, context))
    }

    public static func update(
        _ current: MarkerWithDetails, session: WorkSessionPlace, _ body: FieldReader, expectedVersion: Int64?,
        _ context: CommandContext
    ) throws -> (MarkerWithDetails, AppendBatch) {
        let old = current.marker
        try VersionCheck.require(expectedVersion, current: old.version, entity: "marker", id: old.id)
        if let sessionID = try body.id("work_session_id"), sessionID != old.workSessionID {
            throw DomainError.invalid("work_session_id", "a marker cannot move to another work session")
        }
        var marker = old
        for (field, path) in pointFields where body.contains(field) {
            marker[keyPath: path] = try body.requiredPoint(field)
        }
        try apply(body, to: &marker)
        marker.version += 1
        marker.updatedAt = context.now
        let markerEvent = PendingEvent(
            stream: StreamRef(.marker, marker.id), expectedVersion: .exactly(old.version), type: .markerUpdated,
            payload: .marker(marker), metadata: context.metadata()
        )
        var events = [markerEvent]
        var details = current.details
        if marker.corners != old.corners || details == nil {
            let recalculated = MarkerDetailsCommands.calculated(
                marker, keeping: current.details, now: context.now, causedBy: markerEvent, context
            )
            details = recalculated.details
            events.append(recalculated.event)
        }
        return (MarkerWithDetails(marker: marker, details: details), batch(events, current, session, context))
    }

    public static func delete(
        _ current: MarkerWithDetails, session: WorkSessionPlace, expectedVersion: Int64?, _ context: CommandContext
    ) throws -> AppendBatch {
        let marker = current.marker
        try VersionCheck.require(expectedVersion, current: marker.version, entity: "marker", id: marker.id)
        let event = PendingEvent(
            stream: StreamRef(.marker, marker.id), expectedVersion: .exactly(marker.version), type: .markerDeleted,
            payload: .deleted(Deletion(id: marker.id)), metadata: context.metadata()
        )
        var events = [event]
        if current.details != nil {
            events.append(MarkerDetailsCommands.deletion(marker.id, causedBy: event, context))
        }
        return batch(events, current, session, context)
    }

    /// A batch of writes to one existing marker: its locks, and the check that its
    /// details still exist (or still do not) as they did when the command read them.
    static func batch(
        _ events: [PendingEvent], _ current: MarkerWithDetails, _ session: WorkSessionPlace, _ context: CommandContext
    ) -> AppendBatch {
        let id = current.marker.id
        return AppendBatch(
            events: events, locks: locks(current.marker, session), requiredStreams: [StreamRef(.marker, id)],
            expectedChildren: [ExpectedChildren(.detailsOfMarker, of: id, are: current.details == nil ? [] : [id])]
        ).guarded(by: session, context)
    }

    /// The events that delete a marker (and its details) because its parent was deleted.
    static func cascade(
        _ current: MarkerWithDetails, causedBy cause: PendingEvent, _ context: CommandContext
    ) -> [PendingEvent] {
        let id = current.marker.id
        let event = PendingEvent(
            stream: StreamRef(.marker, id), expectedVersion: .any, type: .markerDeleted,
            payload: .deleted(Deletion(id: id, cascadedFrom: cause.stream.name)),
            metadata: context.metadata(causedBy: cause.eventID)
        )
        guard current.details != nil else { return [event] }
        return [event, MarkerDetailsCommands.deletion(id, causedBy: event, context)]
    }

    /// Writers of a marker hold its space and session shared, so that deleting either
    /// (which holds it exclusively) never overlaps a marker write.
    static func locks(_ marker: Marker, _ session: WorkSessionPlace) -> [StreamLock] {
        parentLocks(session) + [.exclusive(StreamRef(.marker, marker.id))]
    }

    static func parentLocks(_ session: WorkSessionPlace) -> [StreamLock] {
        [.shared(StreamRef(.space, session.spaceID)), .shared(sessionStream(session))]
    }

    static func sessionStream(_ session: WorkSessionPlace) -> StreamRef { StreamRef(.workSession, session.id) }

    static var pointFields: [(String, WritableKeyPath<Marker, Point3>)] {
        [("p1", \.p1), ("p2", \.p2), ("p3", \.p3), ("p4", \.p4)]
    }

    static func newMarker(
        _ body: FieldReader, session: WorkSessionPlace, _ context: CommandContext
    ) throws -> (MarkerWithDetails, [PendingEvent]) {
        let id = try body.id("id") ?? .random()
        let origin = Point3(x: 0, y: 0, z: 0)
        var marker = Marker(
            id: id, workSessionID: session.id, label: nil, p1: origin, p2: origin, p3: origin, p4: origin,
            color: nil, version: 1, meta: [:], customProps: [:], calibratedData: nil,
            createdAt: context.now, updatedAt: context.now
        )
        for (field, path) in pointFields {
            marker[keyPath: path] = try body.requiredPoint(field)
        }
        try apply(body, to: &marker)
        let markerEvent = PendingEvent(
            stream: StreamRef(.marker, id), expectedVersion: .noStream, type: .markerCreated,
            payload: .marker(marker), metadata: context.metadata()
        )
        let calculated = MarkerDetailsCommands.calculated(
            marker, keeping: nil, now: context.now, causedBy: markerEvent, context)
        return (MarkerWithDetails(marker: marker, details: calculated.details), [markerEvent, calculated.event])
    }

    static func apply(_ body: FieldReader, to marker: inout Marker) throws {
        if body.contains("label") {
            marker.label = try body.string("label", maxLength: Limits.labelLength, allowEmpty: true)
        }
        if body.contains("color") {
            marker.color = try validColor(body.string("color", maxLength: 7))
        }
        if body.contains("meta") {
            marker.meta = try body.object("meta") ?? [:]
        }
        if body.contains("custom_props") {
            marker.customProps = try body.object("custom_props") ?? [:]
        }
        if body.contains("calibrated_data") {
            marker.calibratedData = try body.object("calibrated_data").map(calibratedData)
        }
    }

    static func validColor(_ text: String?) throws -> String? {
        guard let text else { return nil }
        let bytes = Array(text.utf8)
        let isHex = { (byte: UInt8) in (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
        }
        guard bytes.count == 7, bytes[0] == 35, bytes.dropFirst().allSatisfy(isHex) else {
            throw DomainError.invalid("color", "expected #RRGGBB, got \"\(text)\"")
        }
        return text
    }

    static func calibratedData(_ object: JSONObject) throws -> CalibratedData {
        let reader = FieldReader(object)
        do {
            return CalibratedData(
                p1: try reader.requiredPoint("p1"), p2: try reader.requiredPoint("p2"),
                p3: try reader.requiredPoint("p3"), p4: try reader.requiredPoint("p4"),
                center: try reader.requiredPoint("center")
            )
        } catch let error as DomainError {
            throw error.nested(under: "calibrated_data")
        }
    }
}
