import Foundation
import RoboscopeDomain
import RoboscopeRedis
import Synchronization

/// This gateway's open connections as the operator lists them (`GET /admin/connections`):
/// each shard hands in its rows when they changed (at most every 2 s, from its own
/// thread), and the presence thread publishes them in Redis under
/// `roboscope:ws:connections:<gateway>` with a TTL, so a gateway that dies leaves no
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
    private let rows = Mutex<[Int: [Row]]>([:])

    init(gateway: String) {
        self.gateway = gateway
    }

    /// Shard `shard`'s rows now.
    func update(shard: Int, _ shardRows: [Row]) {
        rows.withLock { $0[shard] = shardRows }
    }

    /// The document published: `{"gateway", "count", "connections": [...]}`.
    func document() -> JSONValue {
        let all = rows.withLock { $0.values.flatMap { $0 } }
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
    func publish(on redis: RedisConnection) throws {
        let text = String(decoding: document().canonicalJSON, as: UTF8.self)
        _ = try redis.command(["SET", ConnectionDirectoryKeys.keyPrefix + gateway, text, "EX", String(Self.ttlSeconds)])
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
