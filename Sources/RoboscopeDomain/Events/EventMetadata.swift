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

extension Provenance: Decodable {
    enum CodingKeys: String, CodingKey {
        case actor
        case requestID = "request_id"
        case correlationID = "correlation_id"
        case clientAddress = "client_address"
        case userAgent = "user_agent"
        case clientMutationID = "client_mutation_id"
        case tenant, scope
        case traceParent = "traceparent"
    }
}

/// The `metadata` column of one event: the provenance of the request that caused it and,
/// for a cascade, the event that did. Fields absent from older events (the idempotency
/// key, the tenant and scopes, the trace context: each written since its stage) decode
/// as nil.
@dynamicMemberLookup
public struct EventMetadata: Hashable, Sendable, Decodable {
    public var provenance: Provenance
    /// The event that caused this one (a cascade), if any.
    public var causationID: EntityID?

    public init(_ provenance: Provenance, causationID: EntityID?) {
        self.provenance = provenance
        self.causationID = causationID
    }

    public subscript<Field>(dynamicMember field: WritableKeyPath<Provenance, Field>) -> Field {
        get { provenance[keyPath: field] }
        set { provenance[keyPath: field] = newValue }
    }

    enum CodingKeys: String, CodingKey {
        case causationID = "causation_id"
    }

    public init(from decoder: any Decoder) throws {
        provenance = try Provenance(from: decoder)
        causationID = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(
            EntityID.self, forKey: .causationID)
    }
}

extension EventMetadata: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("actor"); writer.value(provenance.actor)
            writer.key("request_id"); writer.value(provenance.requestID)
            writer.key("correlation_id"); writer.value(provenance.correlationID)
            writer.key("causation_id"); writer.value(causationID?.description)
            writer.key("client_address"); writer.value(provenance.clientAddress)
            writer.key("user_agent"); writer.value(provenance.userAgent)
            // Only when there is one: most writes carry none.
            if let key = provenance.clientMutationID { writer.key("client_mutation_id"); writer.value(key) }
            if let tenant = provenance.tenant { writer.key("tenant"); writer.value(tenant) }
            if let scope = provenance.scope { writer.key("scope"); writer.value(scope) }
            if let trace = provenance.traceParent { writer.key("traceparent"); writer.value(trace.header) }
        }
    }
}
