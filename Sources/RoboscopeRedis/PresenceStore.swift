/// Who is present in a work session: one sorted set per session, members scored by
/// the Redis server's clock at their last heartbeat. Heartbeats and listings cost
/// O(log n); an idle session's key expires by itself. Joins and leaves (including
/// expiry noticed on a listing) are published on `roboscope:presence:<session>:events`.
public struct PresenceStore: Sendable {
    public let redis: RedisPool
    /// Users heard from within this window are present.
    public let window: Duration
    /// Present users a session may hold; a heartbeat of one more is refused (`full`).
    public let maxUsers: Int

    public init(redis: RedisPool, window: Duration, maxUsers: Int = 1000) {
        self.redis = redis
        self.window = window
        self.maxUsers = maxUsers
    }

    static func key(_ session: String) -> String { "roboscope:presence:\(session)" }
    public static func channel(_ session: String) -> String { "roboscope:presence:\(session):events" }

    var windowMilliseconds: Int64 {
        let (seconds, attoseconds) = window.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Lua that removes the members of `KEYS[1]` not heard from within `window`
    /// milliseconds before `now`, announcing each leave on `channel`.
    static func dropExpired(window: String, channel: String) -> String {
        """
        local cutoff = '(' .. (now - tonumber(\(window)))
        local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cutoff)
        if #expired > 0 then
            redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', cutoff)
            for _, user in ipairs(expired) do
                redis.call('PUBLISH', \(channel), cjson.encode({event = 'leave', user_id = user, reason = 'expired'}))
            end
        end
        """
    }

    static let listScript = """
        local t = redis.call('TIME')
        local now = t[1] * 1000 + math.floor(t[2] / 1000)
        \(dropExpired(window: "ARGV[1]", channel: "ARGV[2]"))
        return redis.call('ZRANGE', KEYS[1], 0, -1)
        """

    static let leaveScript = """
        local removed = redis.call('ZREM', KEYS[1], ARGV[1])
        if removed == 1 then
            redis.call('PUBLISH', ARGV[2], cjson.encode({event = 'leave', user_id = ARGV[1], reason = 'left'}))
        end
        return removed
        """

    /// Returns whether the user joined and the Redis clock it recorded (milliseconds),
    /// so a later `leave(…, ifLastSeenAtOrBefore:)` can tell whether anyone beat since;
    /// `{-1, now}` when the user is new and the session holds `ARGV[4]` users already
    /// (counted after dropping the expired ones, which costs only at the cap).
    static let heartbeatScript = """
        local t = redis.call('TIME')
        local now = t[1] * 1000 + math.floor(t[2] / 1000)
        if not redis.call('ZSCORE', KEYS[1], ARGV[1]) and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
            \(dropExpired(window: "ARGV[2]", channel: "ARGV[3]"))
            if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
                return {-1, now}
            end
        end
        local added = redis.call('ZADD', KEYS[1], now, ARGV[1])
        redis.call('PEXPIRE', KEYS[1], ARGV[2] * 2)
        if added == 1 then
            redis.call('PUBLISH', ARGV[3], cjson.encode({event = 'join', user_id = ARGV[1]}))
        end
        return {added, now}
        """

    static let leaveIfUnchangedScript = """
        local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
        if score and tonumber(score) <= tonumber(ARGV[2]) then
            redis.call('ZREM', KEYS[1], ARGV[1])
            redis.call('PUBLISH', ARGV[3], cjson.encode({event = 'leave', user_id = ARGV[1], reason = 'disconnected'}))
            return 1
        end
        return 0
        """

    /// What a heartbeat did.
    public enum Beat: Equatable, Sendable {
        /// Present, since `at` (Redis milliseconds); `joined` when not present before.
        case present(joined: Bool, at: Int64)
        /// Refused: the session holds `maxUsers` present users already.
        case full

        public var joined: Bool { if case .present(true, _) = self { true } else { false } }
    }

    /// A heartbeat of `user` in `session`.
    @discardableResult
    public func heartbeat(session: String, user: String) async throws -> Beat {
        try await redis.withConnection { try self.heartbeat(session: session, user: user, on: $0) }
    }

    /// Users heard from within the window, oldest heartbeat first; expired ones are
    /// removed (and announced) on the way.
    public func users(session: String) async throws -> [String] {
        try await redis.withConnection { try self.users(session: session, on: $0) }
    }

    /// Returns true when the user was present.
    @discardableResult
    public func leave(session: String, user: String) async throws -> Bool {
        let reply = try await redis.command([
            "EVAL", Self.leaveScript, "1", Self.key(session), user, Self.channel(session),
        ])
        return reply.integer == 1
    }

    // MARK: On a connection the caller owns (the gateway's presence thread)

    /// A heartbeat on a connection the caller owns.
    public func heartbeat(session: String, user: String, on connection: RedisConnection) throws -> Beat {
        Self.beat(
            try connection.command([
                "EVAL", Self.heartbeatScript, "1", Self.key(session), user, String(windowMilliseconds),
                Self.channel(session), String(maxUsers),
            ]))
    }

    /// What the heartbeat script answers: `{added, now}`, or `{-1, now}` when full.
    private static func beat(_ reply: RedisReply) -> Beat {
        let parts = reply.array ?? []
        let added = parts.first?.integer ?? 0
        if added < 0 { return .full }
        return .present(joined: added == 1, at: parts.count > 1 ? parts[1].integer ?? 0 : 0)
    }

    /// Many heartbeats in one round trip (a pipeline), answered in order; throws if
    /// Redis refuses any of them. Each is the same script `heartbeat` runs.
    public func heartbeats(
        _ keys: [(session: String, user: String)], on connection: RedisConnection
    ) throws -> [Beat] {
        let window = String(windowMilliseconds)
        let max = String(maxUsers)
        let replies = try connection.pipeline(
            keys.map { key in
                [
                    "EVAL", Self.heartbeatScript, "1", Self.key(key.session), key.user, window,
                    Self.channel(key.session), max,
                ]
            })
        return try replies.map { reply in
            if case .error(let message) = reply { throw RedisError(.command, message) }
            return Self.beat(reply)
        }
    }

    public func users(session: String, on connection: RedisConnection) throws -> [String] {
        let reply = try connection.command([
            "EVAL", Self.listScript, "1", Self.key(session), String(windowMilliseconds), Self.channel(session),
        ])
        return (reply.array ?? []).compactMap(\.string)
    }

    /// Leaves unless someone heartbeated for the user after `at` (Redis milliseconds):
    /// a client that reconnected elsewhere keeps its presence.
    @discardableResult
    public func leave(
        session: String, user: String, ifLastSeenAtOrBefore at: Int64, on connection: RedisConnection
    ) throws -> Bool {
        let reply = try connection.command([
            "EVAL", Self.leaveIfUnchangedScript, "1", Self.key(session), user, String(at), Self.channel(session),
        ])
        return reply.integer == 1
    }

    /// Many conditional leaves (`leave(session:user:ifLastSeenAtOrBefore:on:)`) in one
    /// round trip; for each, whether the user was present and left.
    public func leaves(
        _ keys: [(session: String, user: String, lastSeen: Int64)], on connection: RedisConnection
    ) throws -> [Bool] {
        let replies = try connection.pipeline(
            keys.map { key in
                [
                    "EVAL", Self.leaveIfUnchangedScript, "1", Self.key(key.session), key.user, String(key.lastSeen),
                    Self.channel(key.session),
                ]
            })
        return try replies.map { reply in
            if case .error(let message) = reply { throw RedisError(.command, message) }
            return reply.integer == 1
        }
    }

    /// The work session a presence channel belongs to.
    public static func session(ofChannel channel: String) -> String? {
        let prefix = "roboscope:presence:"
        let suffix = ":events"
        guard channel.hasPrefix(prefix), channel.hasSuffix(suffix) else { return nil }
        return String(channel.dropFirst(prefix.count).dropLast(suffix.count))
    }

    public static let channelPattern = "roboscope:presence:*:events"
}
