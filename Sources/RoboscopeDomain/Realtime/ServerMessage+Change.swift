extension ServerMessage {
    /// The message for one logged change on `topic`: an `event` carrying the entity as
    /// REST returns it (markers with details), or a `lock` message for the lock stream.
    /// Throws only if the stored data does not decode (a bug, not a client error).
    /// The changes feed lists exactly these messages.
    public static func change(_ change: RecordedChange, topic: Topic) throws -> [UInt8] {
        var writer = JSONWriter(timestampStyle: .wire, capacity: change.data.count + (change.details?.count ?? 0) + 400)
        try write(change, topic: topic, to: &writer)
        return writer.bytes
    }

    /// `change(_:topic:)` written into `writer` as its next value (a page of the changes
    /// feed renders all its messages into one buffer).
    public static func write(_ change: RecordedChange, topic: Topic, to writer: inout JSONWriter) throws {
        if change.streamType == StreamType.workSessionLock.rawValue {
            return writer.raw(try lock(change, topic: topic))
        }
        var failure: (any Error)?
        writer.object { writer in
            writeHead(.event, change, topic: topic, streamType: true, to: &writer)
            writeOrigin(change, to: &writer)
            writer.key("data")
            do { try writer.rawValue { try writeWireData(change, to: &$0) } } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// The data in the REST shape: markers with their details as of the same transaction.
    static func writeWireData(_ change: RecordedChange, to bytes: inout [UInt8]) throws {
        if change.streamType == StreamType.marker.rawValue, !change.type.hasSuffix(".deleted") {
            return try WireData.write(change.data, details: .some(change.details), to: &bytes)
        }
        try WireData.write(change.data, to: &bytes)
    }

    /// `{"op": "lock", "locked": ...}`: who holds the session's lock and until when.
    static func lock(_ change: RecordedChange, topic: Topic) throws -> [UInt8] {
        let audit = try JSONValueDecoder().decode(LockAudit.self, from: change.data)
        let released =
            change.type == EventType.workSessionLockReleased.rawValue
            || change.type == EventType.workSessionLockBroken.rawValue
        // An acquisition's fencing token is its own version in the lock stream.
        let fencingToken =
            change.type == EventType.workSessionLockAcquired.rawValue ? change.version : audit.fencingToken
        let expiresAt =
            released
            ? nil
            : audit.ttlSeconds.map {
                Timestamp(microsecondsSinceEpoch: change.recordedAt.microsecondsSinceEpoch + $0 * 1_000_000)
            }
        return render { writer in
            writeHead(.lock, change, topic: topic, streamType: false, to: &writer)
            writer.key("locked"); writer.value(!released)
            writer.key("holder"); writer.value(audit.holder)
            writer.key("enforce"); writer.value(audit.enforce)
            writer.key("fencing_token"); if let fencingToken { writer.value(fencingToken) } else { writer.null() }
            writer.key("expires_at"); writer.value(expiresAt)
            writeOrigin(change, to: &writer)
        }
    }

    /// The keys an `event` and a `lock` message open with: the op, where the change
    /// stands in the log and on `topic`, and which stream it changed.
    static func writeHead(
        _ op: WireOp, _ change: RecordedChange, topic: Topic, streamType: Bool, to writer: inout JSONWriter
    ) {
        writer.key("op"); writer.value(op.rawValue)
        writer.key("topic"); writer.value(topic)
        writer.key("position"); writer.value(change.position)
        writer.key("topic_seq"); writer.value(change.sequence(on: topic))
        writer.key("type"); writer.value(change.type)
        if streamType { writer.key("stream_type"); writer.value(change.streamType) }
        writer.key("stream_id"); writer.value(change.streamID)
        writer.key("version"); writer.value(change.version)
    }

    /// The keys both close with: when the change was recorded, by whom, through which
    /// request.
    static func writeOrigin(_ change: RecordedChange, to writer: inout JSONWriter) {
        writer.key("recorded_at"); writer.value(change.recordedAt)
        writer.key("actor"); writer.value(change.actor)
        writer.key("client_mutation_id"); writer.value(change.clientMutationID)
        // Only when the write had one: most do not.
        if let trace = change.traceParent { writer.key("traceparent"); writer.value(trace.header) }
    }
}
