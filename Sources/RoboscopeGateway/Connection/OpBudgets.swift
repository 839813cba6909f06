import RoboscopeDomain

/// What every client op costs (docs/websocket.md "Limits"): a token of its connection's
/// bucket and, with authentication on, of its subject's and its tenant's, shared by every
/// connection and loop of the gateway; and a catch-up's size, charged after the fact into
/// debt. The shard asks before it serves an op; tests drive it with any clock.
struct OpBudgets: Sendable {
    let configuration: GatewayConfiguration
    /// Ops per subject (`tenant/subject`) and per tenant, gateway-wide.
    let subjects: SubjectBudgets
    let tenants: SubjectBudgets

    init(configuration: GatewayConfiguration) {
        self.configuration = configuration
        subjects = SubjectBudgets(rate: configuration.subjectOpRate, burst: configuration.subjectOpBurst)
        tenants = SubjectBudgets(rate: configuration.tenantOpRate, burst: max(1, configuration.tenantOpRate * 2))
    }

    /// Takes one op for a connection whose own bucket is `connection`, acting for
    /// `principal` (nil: not authenticated yet, or authentication off); nil when every
    /// bucket had a token, else the refusal naming the limit.
    func take(_ connection: inout TokenBucket, principal: Principal?, now seconds: Double) -> DomainError? {
        if let wait = connection.take(now: seconds) {
            return Self.refusal(
                "more than \(configuration.opRate.formatted()) ops a second on this connection", wait: wait,
                limit: "connection")
        }
        // Without authentication every connection is `anonymous`, and before its first
        // `auth` op a connection has no subject yet: the per-connection bound is the fair one.
        guard configuration.authentication != nil, let principal else { return nil }
        if let wait = subjects.take(for: Self.key(principal), now: seconds) {
            return Self.refusal(
                "more than \(configuration.subjectOpRate.formatted()) ops a second for \(principal.subject)",
                wait: wait, limit: "subject")
        }
        if let wait = tenants.take(for: principal.tenant, now: seconds) {
            return Self.refusal(
                "more than \(configuration.tenantOpRate.formatted()) ops a second for tenant \(principal.tenant)",
                wait: wait, limit: "tenant")
        }
        return nil
    }

    /// A catch-up costs its size, as the changes feed's does: an op for every 100 events
    /// beyond the `subscribe` that asked for it, charged to the connection and, with
    /// authentication on, to its subject and tenant (into debt).
    func charge(_ connection: inout TokenBucket, principal: Principal?, catchUpEvents events: Int, now seconds: Double)
    {
        let cost = Double(events) / 100
        guard cost > 0 else { return }
        connection.charge(cost, now: seconds)
        guard configuration.authentication != nil, let principal else { return }
        subjects.charge(cost, for: Self.key(principal), now: seconds)
        tenants.charge(cost, for: principal.tenant, now: seconds)
    }

    static func key(_ principal: Principal) -> String {
        "\(principal.tenant)/\(principal.subject)"
    }

    static func refusal(_ message: String, wait: Int, limit: String) -> DomainError {
        DomainError(
            .rateLimited, "\(message); retry in \(wait) s",
            details: ["retry_after": .integer(Int64(wait)), "limit": .string(limit)])
    }
}
