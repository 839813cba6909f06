import RoboscopeProofs
import RoboscopeWire
import Synchronization

/// Each log's newest signed checkpoint in Redis (`roboscope:checkpoint:<origin>`), kept
/// apart from Postgres, so that a database restored from an earlier backup is noticed
/// (docs/investigations.md, "Against whom"). The checkpointer's thread calls it
/// synchronously on a connection of its own, made again after a failure.
public final class RedisCheckpointWitness: CheckpointWitness {
    private let endpoint: RedisEndpoint
    private let connection = Mutex<RedisConnection?>(nil)

    public init(endpoint: RedisEndpoint) {
        self.endpoint = endpoint
    }

    public static func key(origin: String) -> String { "roboscope:checkpoint:\(origin)" }

    /// Keeps the larger of the stored and the given checkpoint.
    static let recordScript = """
        local value = redis.call('GET', KEYS[1])
        if value and tonumber(string.match(value, '^(%d+) ')) >= tonumber(ARGV[1]) then return 0 end
        redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2])
        return 1
        """

    public func newest(origin: String) throws -> WitnessedCheckpoint? {
        Self.parse(try command(["GET", Self.key(origin: origin)]))
    }

    public func record(origin: String, _ checkpoint: WitnessedCheckpoint) throws {
        _ = try command([
            "EVAL", Self.recordScript, "1", Self.key(origin: origin), String(checkpoint.size),
            Hex.encode(checkpoint.root),
        ])
    }

    /// The witnessed checkpoint in a `GET` reply.
    public static func parse(_ reply: RedisReply) -> WitnessedCheckpoint? {
        reply.string.flatMap(WitnessedCheckpoint.init(text:))
    }

    private func command(_ arguments: [String]) throws -> RedisReply {
        try connection.withLock { held in
            do {
                let open = try held ?? endpoint.connect()
                held = open
                let reply = try open.command(arguments)
                if case .error(let message) = reply { throw RedisError(.command, message) }
                return reply
            } catch {
                held = nil
                throw error
            }
        }
    }
}
