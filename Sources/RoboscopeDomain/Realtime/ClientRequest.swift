/// A message a WebSocket client sends (text frames carrying JSON).
public enum ClientRequest: Equatable, Sendable {
    /// `since`: the last position the client processed; missed events are replayed.
    /// `presenceChanges` (`"presence": "changes"`): presence arrives as joins and leaves
    /// after one full list, not as the whole list on every change.
    case subscribe(Topic, since: Int64?, presenceChanges: Bool = false)
    case unsubscribe(Topic)
    /// Keep `user` present in the session while the connection lives. With
    /// authentication on the user is the principal's subject, and `user` may be left out.
    case presence(workSessionID: EntityID, user: String?)
    /// Authenticate (the first message of a connection upgraded without a token) or
    /// refresh the token of an open one.
    case auth(token: String)

    /// Every `op` a client may send (the authorization matrix test enumerates them).
    public static let operations = WireOp.fromClients.map(\.rawValue)

    public static let userIDLength = 200
    /// The longest token the service reads (larger ones are refused unread).
    public static let tokenLength = 8 * 1024

    /// Parses one message; a `DomainError` names what is wrong (the gateway answers
    /// with an `error` message and keeps the connection).
    public static func parse(_ bytes: [UInt8]) throws -> ClientRequest {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw DomainError(.malformedRequest, "message is not JSON: \(error)")
        }
        guard case .object(let object) = value else {
            throw DomainError(.malformedRequest, "message must be a JSON object, got \(value.typeName)")
        }
        let fields = FieldReader(object)
        guard let op = try fields.string("op", maxLength: 32) else { throw DomainError.invalid("op", "is required") }
        switch WireOp(rawValue: op) {
        case .subscribe:
            let topic = try topic(fields)
            let since = try fields.integer("since")
            if let since, since < 0 { throw DomainError.invalid("since", "must be a position (0 or more)") }
            let presence = try fields.string("presence", maxLength: 16)
            guard presence == nil || presence == "full" || presence == "changes" else {
                throw DomainError.invalid("presence", "expected \"full\" (the default) or \"changes\"")
            }
            return .subscribe(topic, since: since, presenceChanges: presence == "changes")
        case .unsubscribe:
            return .unsubscribe(try topic(fields))
        case .presence:
            return .presence(
                workSessionID: try fields.requiredID("work_session_id"),
                user: try fields.string("user_id", maxLength: userIDLength)
            )
        case .auth:
            let token = try fields.requiredString("token", maxLength: tokenLength)
            guard !token.isEmpty else { throw DomainError.invalid("token", "must not be empty") }
            return .auth(token: token)
        default:
            throw DomainError(
                .unknownOperation,
                "unknown op \"\(op.prefix(32))\": expected one of \(operations.joined(separator: ", "))",
                field: "op")
        }
    }

    static func topic(_ fields: FieldReader) throws -> Topic {
        let text = try fields.requiredString("topic", maxLength: 64)
        guard let topic = Topic(text) else {
            throw DomainError.invalid("topic", "expected work_session:<uuid> or space:<uuid>")
        }
        return topic
    }
}
