/// Who made a change and through which request: stored with every event.
public struct Provenance: Hashable, Sendable {
    /// The authenticated subject, else the `X-User-Id` header, else `anonymous`.
    public var actor: String
    public var requestID: String
    /// Groups every event a user action caused, across requests.
    public var correlationID: String
    public var clientAddress: String?
    public var userAgent: String?
    /// The request's `Idempotency-Key`: a client settles its pending write when an
    /// event carrying it arrives.
    public var clientMutationID: String?
    /// The principal's tenant and scopes (rule 7 of docs/security.md); nil for the system.
    public var tenant: String?
    public var scope: String?
    /// The request's W3C trace context, when it sent a well-formed one.
    public var traceParent: TraceParent?

    public init(
        actor: String, requestID: String, correlationID: String? = nil,
        clientAddress: String? = nil, userAgent: String? = nil, clientMutationID: String? = nil,
        tenant: String? = nil, scope: String? = nil, traceParent: TraceParent? = nil
    ) {
        self.actor = actor
        self.requestID = requestID
        self.correlationID = correlationID ?? requestID
        self.clientAddress = clientAddress
        self.userAgent = userAgent
        self.clientMutationID = clientMutationID
        self.tenant = tenant
        self.scope = scope
        self.traceParent = traceParent
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
    /// The `Idempotency-Key` of the request that caused it (absent from events written
    /// before keys existed, and from those of requests without one).
    public var clientMutationID: String?
    /// The tenant and scopes of the principal that caused it (absent from events written
    /// before tenancy existed).
    public var tenant: String?
    public var scope: String?
    /// The trace context of the request that caused it (absent from events of requests
    /// without one, and from those written before tracing existed).
    public var traceParent: TraceParent?

    public init(_ provenance: Provenance, causationID: EntityID?) {
        actor = provenance.actor
        requestID = provenance.requestID
        correlationID = provenance.correlationID
        self.causationID = causationID
        clientAddress = provenance.clientAddress
        userAgent = provenance.userAgent
        clientMutationID = provenance.clientMutationID
        tenant = provenance.tenant
        scope = provenance.scope
        traceParent = provenance.traceParent
    }

    enum CodingKeys: String, CodingKey {
        case actor
        case requestID = "request_id"
        case correlationID = "correlation_id"
        case causationID = "causation_id"
        case clientAddress = "client_address"
        case userAgent = "user_agent"
        case clientMutationID = "client_mutation_id"
        case tenant, scope
        case traceParent = "traceparent"
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
            // Only when there is one: most writes carry none.
            if let clientMutationID { writer.key("client_mutation_id"); writer.value(clientMutationID) }
            if let tenant { writer.key("tenant"); writer.value(tenant) }
            if let scope { writer.key("scope"); writer.value(scope) }
            if let traceParent { writer.key("traceparent"); writer.value(traceParent.header) }
        }
    }
}
