/// Marks a keyed request as running, across every API instance: `SET NX PX` on
/// `roboscope:request:<id>`. Lock requests change Redis before they append, so the
/// idempotency check inside the append comes too late to keep a duplicate from taking
/// (or refusing) a lock; this claim comes first.
public struct RequestClaims: Sendable {
    public let redis: RedisPool

    public init(redis: RedisPool) {
        self.redis = redis
    }

    static func key(_ id: String) -> String { "roboscope:request:\(id)" }

    /// True when the claim is now ours; false while another request holds it.
    public func claim(_ id: String, ttlMilliseconds: Int64) async throws -> Bool {
        try await redis.command(["SET", Self.key(id), "1", "NX", "PX", String(ttlMilliseconds)]) == .status("OK")
    }

    public func release(_ id: String) async throws {
        _ = try await redis.command(["DEL", Self.key(id)])
    }
}
