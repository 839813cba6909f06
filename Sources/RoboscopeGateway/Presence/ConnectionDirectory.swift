import Foundation
import RoboscopeDomain
import RoboscopeRedis
import Synchronization

/// This gateway's open connections as the operator lists them (`GET /admin/connections`):
/// each shard hands in its rows when they changed (at most every 2 s, from its own
/// thread), and the presence thread publishes them in Redis under
/// `roboscope:<deployment>:ws:connections:<gateway>` with a TTL, so a gateway that dies leaves no
/// stale list behind. At most `maxRows` rows a gateway (the count says how many there
/// are): a listing is for finding someone, not for exporting 100,000 sockets.
final class ConnectionDirectory: Sendable {
    struct Row: Sendable {
        var tenant: String
        var subject: String
        var connectedAt: Timestamp
        var clientAddress: String
        var userAgent: String?
        var topics: [String]
    }

    static let ttlSeconds = 10
    static let maxRows = 10_000

    /// This process's name among the gateways: host, process and port.
    let gateway: String
    /// The deployment's keys: where the document goes, where disconnects come from.
    let keys: ConnectionDirectoryKeys
    private let rows = Mutex<(byShard: [Int: [Row]], generation: UInt64)>(([:], 0))
    /// The last document published and the rows' generation it was written from (the
    /// presence thread's): while no shard hands in new rows, publishing renews the key's
    /// expiry instead of writing up to 10,000 rows as JSON again every 2 s.
    private let published = Mutex<(generation: UInt64, text: String)?>(nil)

    init(gateway: String, keys: ConnectionDirectoryKeys) {
        self.gateway = gateway
        self.keys = keys
    }

    /// Shard `shard`'s rows now.
    func update(shard: Int, _ shardRows: [Row]) {
        rows.withLock {
            $0.byShard[shard] = shardRows
            $0.generation += 1
        }
    }

    /// The document published: `{"gateway", "count", "connections": [...]}`.
    private func document(of all: [Row]) -> JSONValue {
        let listed = all.prefix(Self.maxRows).map { row -> JSONValue in
            .object([
                "tenant": .string(row.tenant), "subject": .string(row.subject),
                "connected_at": .string(row.connectedAt.formatted(.wire)), "client_address": .string(row.clientAddress),
                "user_agent": row.userAgent.map(JSONValue.string) ?? .null,
                "topics": .array(row.topics.map(JSONValue.string)),
            ])
        }
        return .object([
            "gateway": .string(gateway), "count": .integer(Int64(all.count)), "connections": .array(Array(listed)),
        ])
    }

    /// Publishes the document, expiring unless published again.
    /// Unchanged rows only renew the key (EXPIRE); a key Redis lost (a restart, a
    /// failover) is written again from the document kept.
    func publish(on redis: RedisConnection) throws {
        let key = keys.keyPrefix + gateway
        if let last = published.withLock({ $0 }), last.generation == rows.withLock({ $0.generation }) {
            if try redis.command(["EXPIRE", key, String(Self.ttlSeconds)]).integer == 1 { return }
            _ = try redis.command(["SET", key, last.text, "EX", String(Self.ttlSeconds)])
            return
        }
        let (all, generation) = rows.withLock { ($0.byShard.values.flatMap { $0 }, $0.generation) }
        let text = String(decoding: document(of: all).canonicalJSON, as: UTF8.self)
        _ = try redis.command(["SET", key, text, "EX", String(Self.ttlSeconds)])
        published.withLock { $0 = (generation, text) }
    }

    /// Who an operator's disconnect names: a tenant, and one subject of it or all.
    struct Disconnect: Sendable {
        var tenant: String
        var subject: String?

        init?(payload: String) {
            guard case .object(let fields)? = try? JSONParser.parse(Data(payload.utf8)),
                let tenant = fields["tenant"]?.stringValue
            else { return nil }
            self.tenant = tenant
            subject = fields["subject"]?.stringValue
        }

        func matches(_ principal: Principal) -> Bool {
            principal.tenant == tenant && (subject == nil || principal.subject == subject)
        }
    }
}
