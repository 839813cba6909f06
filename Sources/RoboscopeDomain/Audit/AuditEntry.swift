/// One line of the audit trail: who changed what, when, through which request, and
/// the fields the change touched.
public struct AuditEntry: Sendable {
    public var position: Int64
    public var recordedAt: Timestamp
    public var type: String
    public var streamType: String
    public var streamID: EntityID
    public var version: Int64
    public var metadata: EventMetadata
    public var changes: [FieldChange]

    public init(
        position: Int64, recordedAt: Timestamp, type: String, streamType: String, streamID: EntityID, version: Int64,
        metadata: EventMetadata, changes: [FieldChange]
    ) {
        self.position = position
        self.recordedAt = recordedAt
        self.type = type
        self.streamType = streamType
        self.streamID = streamID
        self.version = version
        self.metadata = metadata
        self.changes = changes
    }
}

extension AuditEntry: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("position"); writer.value(position)
            writer.key("recorded_at"); writer.value(recordedAt)
            writer.key("actor"); writer.value(metadata.actor)
            // Rule 7 of docs/security.md: whose organization, with which scopes (null
            // for changes made without authentication before tenancy, or by the system).
            writer.key("tenant"); writer.value(metadata.tenant)
            writer.key("scope"); writer.value(metadata.scope)
            writer.key("request_id"); writer.value(metadata.requestID)
            writer.key("correlation_id"); writer.value(metadata.correlationID)
            writer.key("causation_id"); writer.value(metadata.causationID?.description)
            writer.key("client_mutation_id"); writer.value(metadata.clientMutationID)
            writer.key("client")
            writer.object { writer in
                writer.key("address"); writer.value(metadata.clientAddress)
                writer.key("user_agent"); writer.value(metadata.userAgent)
            }
            writer.key("type"); writer.value(type)
            writer.key("entity")
            writer.object { writer in
                writer.key("type"); writer.value(streamType)
                writer.key("id"); writer.value(streamID)
            }
            writer.key("version"); writer.value(version)
            writer.key("changes")
            writer.object { writer in
                for change in changes {
                    writer.key(change.field)
                    writer.object { writer in
                        writer.key("before"); writer.value(change.before ?? .null)
                        writer.key("after"); writer.value(change.after ?? .null)
                    }
                }
            }
        }
    }
}

/// A page of the audit trail: `next_after` is the `after` for the next page (oldest
/// first), `next_before` the `before` for the next page (newest first); null at the end.
public struct AuditPage: Sendable, JSONWritable {
    public var entries: [AuditEntry]
    public var nextAfter: Int64?
    public var nextBefore: Int64?

    public init(entries: [AuditEntry], nextAfter: Int64?, nextBefore: Int64? = nil) {
        self.entries = entries
        self.nextAfter = nextAfter
        self.nextBefore = nextBefore
    }

    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("data"); writer.array(entries) { $0.value($1) }
            writeCursors(to: &writer)
        }
    }

    /// The members after `data`, for a writer that renders the entries itself (the API
    /// streams a large page).
    public func writeCursors(to writer: inout JSONWriter) {
        writer.key("next_after"); writer.value(nextAfter)
        writer.key("next_before"); writer.value(nextBefore)
    }
}
