import Foundation
import RoboscopeDomain

/// Work session locks in Redis: `roboscope:lock:<session>` holds the holder's record
/// with a TTL (`SET NX PX`); extend and release compare the token inside a Lua script,
/// so only the holder can act, atomically.
public struct LockStore: Sendable {
    public let redis: RedisPool

    public init(redis: RedisPool) {
        self.redis = redis
    }

    /// What the lock key holds.
    public struct Holding: Sendable, Hashable {
        public var token: String
        public var holder: String
        public var fencingToken: Int64?
        public var enforce: Bool
        /// Milliseconds left before it expires.
        public var remainingMilliseconds: Int64

        /// Reads the JSON record the lock key holds.
        init?(record text: String, remainingMilliseconds: Int64) {
            guard let object = (try? JSONParser.parse(Array(text.utf8)))?.objectValue,
                let token = object["token"]?.stringValue, let holder = object["holder"]?.stringValue
            else { return nil }
            self.token = token
            self.holder = holder
            // cjson writes integers as numbers with a fraction at times: any number will do.
            fencingToken = object["fencing_token"]?.doubleValue.map { Int64($0) }
            enforce = object["enforce"] == .bool(true)
            self.remainingMilliseconds = max(0, remainingMilliseconds)
        }
    }

    static func key(_ session: String) -> String { "roboscope:lock:\(session)" }

    /// A random 128-bit token, as hex.
    public static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return [generator.next() as UInt64, generator.next() as UInt64]
            .map { String($0, radix: 16).leftPadded(to: 16) }.joined()
    }

    static func record(token: String, holder: String, fencingToken: Int64?, enforce: Bool) -> String {
        var writer = JSONWriter(timestampStyle: .wire, capacity: 128)
        writer.object { writer in
            writer.key("enforce"); writer.value(enforce)
            writer.key("fencing_token"); writer.value(fencingToken)
            writer.key("holder"); writer.value(holder)
            writer.key("token"); writer.value(token)
        }
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Takes the lock if it is free; nil when someone holds it.
    public func acquire(
        session: String, token: String, holder: String, ttlMilliseconds: Int64, enforce: Bool
    ) async throws -> Bool {
        let reply = try await redis.command([
            "SET", Self.key(session), Self.record(token: token, holder: holder, fencingToken: nil, enforce: enforce),
            "NX", "PX", String(ttlMilliseconds),
        ])
        return reply == .status("OK")
    }

    static let setFencingScript = """
        local value = redis.call('GET', KEYS[1])
        if not value then return 0 end
        local record = cjson.decode(value)
        if record.token ~= ARGV[1] then return 0 end
        record.fencing_token = tonumber(ARGV[2])
        redis.call('SET', KEYS[1], cjson.encode(record), 'KEEPTTL')
        return 1
        """

    /// Records the fencing token Postgres issued in the holder's record.
    public func recordFencingToken(session: String, token: String, fencingToken: Int64) async throws {
        _ = try await redis.command([
            "EVAL", Self.setFencingScript, "1", Self.key(session), token, String(fencingToken),
        ])
    }

    static let readScript = """
        local value = redis.call('GET', KEYS[1])
        if not value then return nil end
        return {value, redis.call('PTTL', KEYS[1])}
        """

    public func current(session: String) async throws -> Holding? {
        let reply = try await redis.command(["EVAL", Self.readScript, "1", Self.key(session)])
        guard let items = reply.array, items.count == 2, let text = items[0].string, let remaining = items[1].integer
        else {
            return nil
        }
        return Holding(record: text, remainingMilliseconds: remaining)
    }

    static let extendScript = """
        local value = redis.call('GET', KEYS[1])
        if not value then return nil end
        if cjson.decode(value).token ~= ARGV[1] then return nil end
        redis.call('PEXPIRE', KEYS[1], ARGV[2])
        return value
        """

    /// The renewed holding when `token` holds the lock, else nil.
    public func extend(session: String, token: String, ttlMilliseconds: Int64) async throws -> Holding? {
        let reply = try await redis.command([
            "EVAL", Self.extendScript, "1", Self.key(session), token, String(ttlMilliseconds),
        ])
        return reply.string.flatMap { Holding(record: $0, remainingMilliseconds: ttlMilliseconds) }
    }

    static let releaseScript = """
        local value = redis.call('GET', KEYS[1])
        if not value then return nil end
        if cjson.decode(value).token ~= ARGV[1] then return nil end
        redis.call('DEL', KEYS[1])
        return value
        """

    static let breakScript = """
        local value = redis.call('GET', KEYS[1])
        if not value then return nil end
        redis.call('DEL', KEYS[1])
        return value
        """

    /// Ends the lock whoever holds it (an administrator's `force`); the holding it ended, if any.
    public func forceRelease(session: String) async throws -> Holding? {
        let reply = try await redis.command(["EVAL", Self.breakScript, "1", Self.key(session)])
        return reply.string.flatMap { Holding(record: $0, remainingMilliseconds: 0) }
    }

    /// The released holding when `token` held the lock, else nil.
    public func release(session: String, token: String) async throws -> Holding? {
        let reply = try await redis.command(["EVAL", Self.releaseScript, "1", Self.key(session), token])
        return reply.string.flatMap { Holding(record: $0, remainingMilliseconds: 0) }
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
