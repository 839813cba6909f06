/// One event about to be appended.
public struct PendingEvent: Hashable, Sendable {
    public var eventID: EntityID
    public var stream: StreamRef
    public var expectedVersion: ExpectedVersion
    public var type: EventType
    public var payload: EventPayload
    public var metadata: EventMetadata

    public init(
        eventID: EntityID = .random(), stream: StreamRef, expectedVersion: ExpectedVersion,
        type: EventType, payload: EventPayload, metadata: EventMetadata
    ) {
        self.eventID = eventID
        self.stream = stream
        self.expectedVersion = expectedVersion
        self.type = type
        self.payload = payload
        self.metadata = metadata
    }
}

/// A lock the append takes on a stream before writing, held until commit.
///
/// Writers of a stream hold an exclusive lock on it or on an ancestor that every
/// other writer of it holds shared, so writes to one stream never overlap.
public struct StreamLock: Hashable, Sendable {
    /// A stream's name, or another name writers must agree on (`space_key:<key>`).
    public var name: String
    public var exclusive: Bool

    public static func exclusive(_ stream: StreamRef) -> StreamLock { StreamLock(name: stream.name, exclusive: true) }
    public static func shared(_ stream: StreamRef) -> StreamLock { StreamLock(name: stream.name, exclusive: false) }

    /// Serialises every writer that takes or frees a space key, so that a delete and a
    /// create of the same key replay in the order they committed.
    /// Keys are unique per tenant, so is their lock.
    public static func spaceKey(_ key: String, tenant: String?) -> StreamLock {
        StreamLock(name: "space_key:\(tenant ?? "")/\(key)", exclusive: true)
    }
}

/// The children a command saw when it decided: checked again under the locks, so
/// that a child created between the read and the append fails the append (and the
/// command retries) instead of being left behind as an orphan.
public struct ExpectedChildren: Hashable, Sendable {
    public enum Kind: String, Sendable {
        case sessionsOfSpace = "sessions_of_space"
        case markersOfSession = "markers_of_session"
        case detailsOfSession = "details_of_session"
        case detailsOfMarker = "details_of_marker"
    }

    public var kind: Kind
    public var parentID: EntityID
    public var childIDs: [EntityID]

    public init(_ kind: Kind, of parentID: EntityID, are childIDs: [EntityID]) {
        self.kind = kind
        self.parentID = parentID
        self.childIDs = childIDs.sorted()
    }
}

/// What a write presents to an enforced lock on its work session.
public struct LockCheck: Hashable, Sendable {
    public var workSessionID: EntityID
    /// SHA-256 (hex) of the `X-Lock-Token` the request carried, if any.
    public var tokenSHA256: String?
}

/// Everything one command appends, in one transaction.
public struct AppendBatch: Hashable, Sendable {
    public var events: [PendingEvent]
    public var locks: [StreamLock]
    /// Streams that must exist and not be deleted (the parent of a new child).
    public var requiredStreams: [StreamRef]
    public var expectedChildren: [ExpectedChildren]
    /// For writes to a work session or its markers: checked against an enforced lock.
    public var lockCheck: LockCheck?

    public init(
        events: [PendingEvent] = [], locks: [StreamLock] = [], requiredStreams: [StreamRef] = [],
        expectedChildren: [ExpectedChildren] = []
    ) {
        self.events = events
        self.locks = locks
        self.requiredStreams = requiredStreams
        self.expectedChildren = expectedChildren
    }
}

extension AppendBatch {
    /// The batch, checked against an enforced lock on `session` with the request's token.
    func guarded(by session: WorkSessionPlace, _ context: CommandContext) -> AppendBatch {
        var batch = self
        batch.lockCheck = LockCheck(workSessionID: session.id, tokenSHA256: context.lockTokenSHA256)
        batch.locks.append(.shared(StreamRef(.workSessionLock, session.id)))
        return batch
    }
}
