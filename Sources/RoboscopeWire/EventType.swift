/// The dotted event types in the log, the one list of them: the SQL, the console and the
/// kit spell only these (`VocabularyTests`). docs/events.md describes each one's data.
public struct EventType: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let spaceCreated = EventType("space.created")
    public static let spaceUpdated = EventType("space.updated")
    public static let spaceDeleted = EventType("space.deleted")
    public static let workSessionCreated = EventType("work_session.created")
    public static let workSessionUpdated = EventType("work_session.updated")
    public static let workSessionDeleted = EventType("work_session.deleted")
    public static let markerCreated = EventType("marker.created")
    public static let markerUpdated = EventType("marker.updated")
    public static let markerDeleted = EventType("marker.deleted")
    /// The server computed details from the marker's points.
    public static let markerDetailsCalculated = EventType("marker_details.calculated")
    /// A client wrote details with `PUT`.
    public static let markerDetailsUpdated = EventType("marker_details.updated")
    public static let markerDetailsDeleted = EventType("marker_details.deleted")
    public static let workSessionLockAcquired = EventType("work_session.lock_acquired")
    public static let workSessionLockExtended = EventType("work_session.lock_extended")
    public static let workSessionLockReleased = EventType("work_session.lock_released")
    /// An administrator ended another subject's lock (`DELETE /locks/{id}?force=true`).
    public static let workSessionLockBroken = EventType("work_session.lock_broken")
    /// An operator or administrator revoked tokens (`POST /admin/revocations`).
    public static let tokenRevocationCreated = EventType("token_revocation.created")
    /// A revocation was lifted (`DELETE /admin/revocations/{id}`).
    public static let tokenRevocationLifted = EventType("token_revocation.lifted")

    /// Every type the service writes.
    public static let all: [EventType] = [
        spaceCreated, spaceUpdated, spaceDeleted, workSessionCreated, workSessionUpdated, workSessionDeleted,
        markerCreated, markerUpdated, markerDeleted, markerDetailsCalculated, markerDetailsUpdated,
        markerDetailsDeleted,
        workSessionLockAcquired, workSessionLockExtended, workSessionLockReleased, workSessionLockBroken,
        tokenRevocationCreated, tokenRevocationLifted,
    ]
}
