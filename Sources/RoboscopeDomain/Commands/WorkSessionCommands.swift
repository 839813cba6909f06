/// Turns work session requests into events.
public enum WorkSessionCommands {
    public static func create(
        _ body: FieldReader, space: Space, _ context: CommandContext
    ) throws -> (WorkSession, AppendBatch) {
        let id = try body.id("id") ?? .random()
        var session = WorkSession(
            id: id, spaceID: space.id,
            sessionType: try body.enumeration("session_type", WorkSession.SessionType.self) ?? .inspection,
            status: .draft, startedAt: context.now, completedAt: nil, version: 1, meta: [:],
            createdAt: context.now, updatedAt: context.now
        )
        try apply(body, to: &session, now: context.now)
        let event = PendingEvent(
            stream: StreamRef(.workSession, id), expectedVersion: .noStream, type: .workSessionCreated,
            payload: .workSession(session), metadata: context.metadata()
        )
        let parent = StreamRef(.space, space.id)
        return (session, AppendBatch(events: [event], locks: [.shared(parent)], requiredStreams: [parent]))
    }

    public static func update(
        _ current: WorkSession, _ body: FieldReader, expectedVersion: Int64?, _ context: CommandContext
    ) throws -> (WorkSession, AppendBatch) {
        try VersionCheck.require(expectedVersion, current: current.version, entity: "work session", id: current.id)
        if let spaceID = try body.id("space_id"), spaceID != current.spaceID {
            throw DomainError.invalid("space_id", "a work session cannot move to another space")
        }
        var session = current
        if body.contains("session_type") {
            guard let type = try body.enumeration("session_type", WorkSession.SessionType.self) else {
                throw DomainError.invalid("session_type", "must not be null")
            }
            session.sessionType = type
        }
        try apply(body, to: &session, now: context.now)
        session.version += 1
        session.updatedAt = context.now
        let stream = StreamRef(.workSession, session.id)
        let event = PendingEvent(
            stream: stream, expectedVersion: .exactly(current.version), type: .workSessionUpdated,
            payload: .workSession(session), metadata: context.metadata()
        )
        return (session, AppendBatch(events: [event], locks: locks(for: session)).guarded(by: current.place, context))
    }

    public static func delete(
        _ contents: SessionContents, expectedVersion: Int64?, _ context: CommandContext
    ) throws -> AppendBatch {
        let session = contents.session
        try VersionCheck.require(expectedVersion, current: session.version, entity: "work session", id: session.id)
        let event = PendingEvent(
            stream: StreamRef(.workSession, session.id), expectedVersion: .exactly(session.version),
            type: .workSessionDeleted, payload: .deleted(Deletion(id: session.id)), metadata: context.metadata()
        )
        var batch = AppendBatch(
            events: [event], locks: locks(for: session), expectedChildren: expectedChildren(contents))
        batch.events += contents.markers.flatMap { MarkerCommands.cascade($0, causedBy: event, context) }
        return batch.guarded(by: session.place, context)
    }

    static func expectedChildren(_ contents: SessionContents) -> [ExpectedChildren] {
        let id = contents.session.id
        return [
            ExpectedChildren(.markersOfSession, of: id, are: contents.markers.map(\.marker.id)),
            ExpectedChildren(
                .detailsOfSession, of: id, are: contents.markers.filter { $0.details != nil }.map(\.marker.id)),
        ]
    }

    /// The events that delete a session and its markers because its space was deleted.
    static func cascade(
        _ contents: SessionContents, causedBy cause: PendingEvent, _ context: CommandContext
    ) -> [PendingEvent] {
        let session = contents.session
        let event = PendingEvent(
            stream: StreamRef(.workSession, session.id), expectedVersion: .any, type: .workSessionDeleted,
            payload: .deleted(Deletion(id: session.id, cascadedFrom: cause.stream.name)),
            metadata: context.metadata(causedBy: cause.eventID)
        )
        return [event] + contents.markers.flatMap { MarkerCommands.cascade($0, causedBy: event, context) }
    }

    static func locks(for session: WorkSession) -> [StreamLock] {
        [.shared(StreamRef(.space, session.spaceID)), .exclusive(StreamRef(.workSession, session.id))]
    }

    static func apply(_ body: FieldReader, to session: inout WorkSession, now: Timestamp) throws {
        if body.contains("status") {
            guard let status = try body.enumeration("status", WorkSession.Status.self) else {
                throw DomainError.invalid("status", "must not be null")
            }
            // Finishing a session stamps its completion time unless the client gives one.
            if status == .done, session.status != .done, !body.contains("completed_at"), session.completedAt == nil {
                session.completedAt = now
            }
            session.status = status
        }
        if body.contains("started_at") {
            guard let started = try body.timestamp("started_at") else {
                throw DomainError.invalid("started_at", "must not be null")
            }
            session.startedAt = started
        }
        if body.contains("completed_at") {
            session.completedAt = try body.timestamp("completed_at")
        }
        // Clients see whole seconds: a completion they write as the start they read
        // (01:24:59Z for a start stored as 01:24:59.123) is not before it.
        if let completed = session.completedAt, completed.wholeSeconds < session.startedAt.wholeSeconds {
            throw DomainError.invalid(
                "completed_at",
                "\(completed.formatted(.wire)) is before started_at \(session.startedAt.formatted(.wire))"
            )
        }
        if body.contains("meta") {
            session.meta = try body.object("meta") ?? [:]
        }
    }
}
