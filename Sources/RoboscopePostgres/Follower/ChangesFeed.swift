import RoboscopeDomain

/// The changes feed (`GET /api/v1/changes`): a topic's events after a position, in topic
/// order, read through the same query and decoder as the gateways' catch-up.
public struct ChangesFeed: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// One page: up to `limit` events after `since`, each folded into `page` by `add` on
    /// the connection's thread as its row arrives (so rendering overlaps the server
    /// producing the rest), the position of the last, and whether more follow. Nil when
    /// the topic has no event at all (an unknown topic).
    public func page<Page: Sendable>(
        _ topic: Topic, since: Int64, limit: Int, into page: Page,
        adding add: @escaping @Sendable (inout Page, Delivery) throws -> Void
    ) async throws -> (page: Page, last: Int64?, hasMore: Bool)? {
        try await pool.translatingErrors { connection in
            var page = page
            var count = 0
            var last: Int64?
            try DeliveryReader.topic(topic, after: since, limit: limit + 1, on: connection) { delivery in
                count += 1
                guard count <= limit else { return }
                try add(&page, delivery)
                last = delivery.change.position
            }
            if count == 0, try DeliveryReader.head(of: topic, on: connection) == nil { return nil }
            return (page, last, count > limit)
        }
    }
}
