import RoboscopeDomain

/// The changes feed (`GET /api/v1/changes`): a topic's events after a position, in topic
/// order, read through the same view and decoder as the gateways' catch-up.
public struct ChangesFeed: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// One page: up to `limit` events after `since`, and whether more follow. Nil when
    /// the topic has no event at all (an unknown topic).
    public func page(_ topic: Topic, since: Int64, limit: Int) async throws -> (events: [Delivery], hasMore: Bool)? {
        try await pool.translatingErrors { connection in
            let events = try DeliveryReader.topic(topic, after: since, limit: limit + 1, on: connection)
            if events.isEmpty, try DeliveryReader.head(of: topic, on: connection) == nil { return nil }
            return (Array(events.prefix(limit)), events.count > limit)
        }
    }
}
