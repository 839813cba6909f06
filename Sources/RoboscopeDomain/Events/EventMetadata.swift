/// Who made a change and through which request: stored with every event.
public struct Provenance: Hashable, Sendable {
    /// The authenticated subject, else the `X-User-Id` header, else `anonymous`.
    public var actor: String
    public var requestID: String
    /// Groups every event a user action caused, across requests.
    public var correlationID: String
    public var clientAddress: String?
    public var userAgent: String?

    public init(actor: String, requestID: String, correlationID: String? = nil,
                clientAddress: String? = nil, userAgent: String? = nil) {
        self.actor = actor
        self.requestID = requestID
        self.correlationID = correlationID ?? requestID
        self.clientAddress = clientAddress
        self.userAgent = userAgent
    }

    public static func system(_ reason: String) -> Provenance {
        Provenance(actor: "system", requestID: reason)
    }
}

/// The `metadata` column of one event.
public struct EventMetadata: Hashable, Sendable, Decodable {
    public var actor: String
    public var requestID: String
    public var correlationID: String
    /// The event that caused this one (a cascade), if any.
    public var causationID: EntityID?
    public var clientAddress: String?
    public var userAgent: String?

    public init(_ provenance: Provenance, causationID: EntityID?) {
        actor = provenance.actor
        requestID = provenance.requestID
        correlationID = provenance.correlationID
        self.causationID = causationID
        clientAddress = provenance.clientAddress
        userAgent = provenance.userAgent
    }

    enum CodingKeys: String, CodingKey {
        case actor
        case requestID = "request_id"
        case correlationID = "correlation_id"
        case causationID = "causation_id"
        case clientAddress = "client_address"
        case userAgent = "user_agent"
    }
}

extension EventMetadata: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("actor"); writer.value(actor)
            writer.key("request_id"); writer.value(requestID)
            writer.key("correlation_id"); writer.value(correlationID)
            writer.key("causation_id"); writer.value(causationID?.description)
            writer.key("client_address"); writer.value(clientAddress)
            writer.key("user_agent"); writer.value(userAgent)
        }
    }
}
