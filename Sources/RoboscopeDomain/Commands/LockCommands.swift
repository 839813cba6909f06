/// Lock requests: validation and the audit events they append.
public enum LockCommands {
    public static let ttlRange: ClosedRange<Int64> = 1...3600

    /// `ttl_seconds`, 1 to 3600; `default` when absent.
    public static func ttl(_ body: FieldReader, default fallback: Int64? = 30) throws -> Int64 {
        guard let ttl = try body.integer("ttl_seconds") ?? fallback else {
            throw DomainError.invalid("ttl_seconds", "is required")
        }
        guard ttlRange.contains(ttl) else {
            throw DomainError.invalid(
                "ttl_seconds", "must be between \(ttlRange.lowerBound) and \(ttlRange.upperBound)")
        }
        return ttl
    }

    public static func token(_ body: FieldReader) throws -> String {
        try body.requiredString("token", maxLength: 64)
    }

    public static func acquired(
        _ session: WorkSession, ttl: Int64, enforce: Bool, tokenSHA256: String, _ context: CommandContext
    ) -> AppendBatch {
        audit(
            session, .workSessionLockAcquired,
            LockAudit(
                workSessionID: session.id, holder: context.provenance.actor, ttlSeconds: ttl, enforce: enforce,
                fencingToken: nil, tokenSHA256: tokenSHA256),
            context)
    }

    public static func extended(
        _ session: WorkSession, holder: String, ttl: Int64, enforce: Bool, fencingToken: Int64?,
        _ context: CommandContext
    ) -> AppendBatch {
        audit(
            session, .workSessionLockExtended,
            LockAudit(
                workSessionID: session.id, holder: holder, ttlSeconds: ttl, enforce: enforce, fencingToken: fencingToken
            ),
            context)
    }

    public static func released(
        _ session: WorkSession, holder: String, enforce: Bool, fencingToken: Int64?, _ context: CommandContext
    ) -> AppendBatch {
        ended(.workSessionLockReleased, session, holder: holder, enforce: enforce, fencingToken: fencingToken, context)
    }

    /// An administrator broke `holder`'s lock: recorded like a release, under its own type.
    public static func broken(
        _ session: WorkSession, holder: String, enforce: Bool, fencingToken: Int64?, _ context: CommandContext
    ) -> AppendBatch {
        ended(.workSessionLockBroken, session, holder: holder, enforce: enforce, fencingToken: fencingToken, context)
    }

    /// The end of the acquisition `fencingToken` names, as `type` records it.
    static func ended(
        _ type: EventType, _ session: WorkSession, holder: String, enforce: Bool, fencingToken: Int64?,
        _ context: CommandContext
    ) -> AppendBatch {
        audit(
            session, type,
            LockAudit(
                workSessionID: session.id, holder: holder, ttlSeconds: nil, enforce: enforce, fencingToken: fencingToken
            ),
            context)
    }

    static func audit(
        _ session: WorkSession, _ type: EventType, _ data: LockAudit, _ context: CommandContext
    ) -> AppendBatch {
        let stream = StreamRef(.workSessionLock, session.id)
        let event = PendingEvent(
            stream: stream, expectedVersion: .any, type: type, payload: .lock(data), metadata: context.metadata())
        return AppendBatch(
            events: [event],
            locks: [
                .shared(StreamRef(.space, session.spaceID)), .shared(StreamRef(.workSession, session.id)),
                .exclusive(stream),
            ],
            requiredStreams: [StreamRef(.workSession, session.id)]
        )
    }
}
