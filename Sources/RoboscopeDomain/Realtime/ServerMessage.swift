/// The messages the gateway sends, as JSON text (see docs/websocket.md).
public enum ServerMessage {
    /// `position`: the topic's newest event the client has once its catch-up is sent
    /// (pass it as `since` to resume); `topic_seq`: that event's number, when known.
    public static func subscribed(_ topic: Topic, position: Int64, topicSeq: Int64?) -> [UInt8] {
        render { writer in
            writer.key("op"); writer.value(WireOp.subscribed.rawValue)
            writer.key("topic"); writer.value(topic)
            writer.key("position"); writer.value(position)
            writer.key("topic_seq"); writer.value(topicSeq)
        }
    }

    /// `reason`: absent when the client asked; `forbidden` when a refreshed token no
    /// longer covers the topic.
    public static func unsubscribed(_ topic: Topic, reason: String? = nil) -> [UInt8] {
        render { writer in
            writer.key("op"); writer.value(WireOp.unsubscribed.rawValue)
            writer.key("topic"); writer.value(topic)
            if let reason { writer.key("reason"); writer.value(reason) }
        }
    }

    /// The answer to an `auth` op: whom the connection now acts for, and until when.
    public static func authenticated(subject: String, tenant: String, expiresAt: Timestamp?) -> [UInt8] {
        render { writer in
            writer.key("op"); writer.value(WireOp.authenticated.rawValue)
            writer.key("subject"); writer.value(subject)
            writer.key("tenant"); writer.value(tenant)
            writer.key("expires_at"); writer.value(expiresAt)
        }
    }

    /// The answer to a `presence` op: the user counts as present while the connection lives.
    public static func present(workSessionID: EntityID, user: String) -> [UInt8] {
        render { writer in
            writer.key("op"); writer.value(WireOp.present.rawValue)
            writer.key("work_session_id"); writer.value(workSessionID)
            writer.key("user_id"); writer.value(user)
        }
    }

    public static func presence(_ topic: Topic, users: [String]) -> [UInt8] {
        render { writer in
            writer.key("op"); writer.value(WireOp.presence.rawValue)
            writer.key("topic"); writer.value(topic)
            writer.key("users"); writer.array(users) { $0.value($1) }
        }
    }

    /// Who joined and who left since the last message (`"presence": "changes"` subscribers).
    public static func presence(_ topic: Topic, joined: [String], left: [String]) -> [UInt8] {
        render { writer in
            writer.key("op"); writer.value(WireOp.presence.rawValue)
            writer.key("topic"); writer.value(topic)
            writer.key("joined"); writer.array(joined) { $0.value($1) }
            writer.key("left"); writer.array(left) { $0.value($1) }
        }
    }

    public static func error(_ error: DomainError, topic: Topic? = nil) -> [UInt8] {
        render { writer in
            writer.key("op"); writer.value(WireOp.error.rawValue)
            writer.key("code"); writer.value(error.code.rawValue)
            writer.key("message"); writer.value(error.message)
            if let field = error.field { writer.key("field"); writer.value(field) }
            if let topic { writer.key("topic"); writer.value(topic) }
            // What REST puts next to the message too (`scope_needed`, ...).
            for key in error.details.keys.sorted() where !["op", "code", "message", "field", "topic"].contains(key) {
                writer.key(key); writer.value(error.details[key]!)
            }
        }
    }

    static func render(capacity: Int = 128, _ body: (inout JSONWriter) -> Void) -> [UInt8] {
        var writer = JSONWriter(timestampStyle: .wire, capacity: capacity)
        writer.object(body)
        return writer.bytes
    }
}
