import BlockingPool
import CHiredis
#if canImport(Glibc)
import Glibc
#endif

/// Owns one hiredis context. Its calls block (with a timeout): use it from one thread
/// at a time, never from Swift's cooperative pool or an event loop (see `RedisPool`).
public final class RedisConnection: BlockingConnection {
    let context: UnsafeMutablePointer<redisContext>
    /// The master epoch it was made under (Sentinel endpoints): a later one retires it.
    private let epoch: (counter: MasterEpoch, value: Int)?
    /// Its node answered `READONLY`: it is a replica now, after a failover.
    private var demoted = false

    /// Connects, authenticates and selects the database; connect and every command
    /// give up after `timeout`.
    public init(_ url: RedisURL, timeout: Duration = .milliseconds(800), epoch: (MasterEpoch, Int)? = nil) throws {
        self.epoch = epoch.map { (counter: $0.0, value: $0.1) }
        let (seconds, attoseconds) = timeout.components
        let interval = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        guard let context = redisConnectWithTimeout(url.host, Int32(url.port), interval) else {
            throw RedisError(.connection, "hiredis could not allocate a context")
        }
        // From here on deinit owns the context, also when init throws.
        self.context = context
        guard context.pointee.err == 0 else {
            throw RedisError(.connection, Self.errorText(context))
        }
        redisSetTimeout(context, interval)
        _ = redisEnableKeepAlive(context)
        if let password = url.password {
            try checkStatus(command(["AUTH", password]))
        }
        if url.database != 0 {
            try checkStatus(command(["SELECT", String(url.database)]))
        }
    }

    deinit {
        redisFree(context)
    }

    /// After an I/O error or timeout hiredis marks the context; it cannot be reused. A
    /// connection to a node that was demoted, or made before the Sentinels announced a
    /// new master, is not used again either: the next one asks the Sentinels.
    public var isBroken: Bool {
        context.pointee.err != 0 || demoted || epoch.map { $0.counter.value != $0.value } == true
    }

    /// A write refused because the node is a replica now.
    private func noteDemotion(_ message: String) -> Bool {
        guard message.hasPrefix("READONLY") else { return false }
        demoted = true
        return true
    }

    /// Sends one command (binary-safe arguments) and returns its reply.
    public func command(_ arguments: [String]) throws -> RedisReply {
        guard !isBroken else { throw RedisError(.connection, Self.errorText(context)) }
        let raw: UnsafeMutableRawPointer? = Self.withArgv(arguments) { count, argv, lengths in
            redisCommandArgv(context, count, argv, lengths)
        }
        guard let raw else {
            throw RedisError(.connection, Self.errorText(context))
        }
        defer { freeReplyObject(raw) }
        let reply = RedisReply(UnsafePointer(raw.assumingMemoryBound(to: redisReply.self)))
        if case .error(let message) = reply {
            // A demoted node is a connection problem (503, retried on a new connection), not a refusal.
            throw RedisError(noteDemotion(message) ? .connection : .command, message)
        }
        return reply
    }

    /// Sends every command before reading any reply (one write, one round trip) and
    /// returns the replies in order. A command Redis refuses gives an `.error` reply in
    /// its place; only a failure of the connection throws.
    ///
    /// At most `Self.pipelineDepth` commands are in flight at a time, so that thousands
    /// (the leaves of every user of a closed gateway) never sit in one buffer.
    public func pipeline(_ commands: [[String]]) throws -> [RedisReply] {
        guard !isBroken else { throw RedisError(.connection, Self.errorText(context)) }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        var start = 0
        while start < commands.count {
            let chunk = commands[start..<min(commands.count, start + Self.pipelineDepth)]
            for arguments in chunk {
                let appended = Self.withArgv(arguments) { count, argv, lengths in
                    redisAppendCommandArgv(context, count, argv, lengths)
                }
                guard appended == REDIS_OK else { throw RedisError(.connection, Self.errorText(context)) }
            }
            for _ in chunk {
                var raw: UnsafeMutableRawPointer?
                guard redisGetReply(context, &raw) == REDIS_OK, let raw else {
                    throw RedisError(.connection, Self.errorText(context))
                }
                replies.append(RedisReply(UnsafePointer(raw.assumingMemoryBound(to: redisReply.self))))
                freeReplyObject(raw)
            }
            start += chunk.count
        }
        for case .error(let message) in replies where noteDemotion(message) {
            throw RedisError(.connection, message)
        }
        return replies
    }

    static let pipelineDepth = 512

    /// Calls `body` with hiredis's argv form of `arguments`: one buffer holds every
    /// argument (binary-safe, with lengths) and argv points into it for the call.
    private static func withArgv<T>(
        _ arguments: [String],
        _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int>?) -> T
    ) -> T {
        var joined: [UInt8] = []
        var offsets: [Int] = []
        var lengths: [Int] = []
        for argument in arguments {
            offsets.append(joined.count)
            joined.append(contentsOf: argument.utf8)
            lengths.append(joined.count - offsets[offsets.count - 1])
        }
        joined.append(0)
        return joined.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            var argv: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
            return argv.withUnsafeMutableBufferPointer { argvPointer in
                lengths.withUnsafeBufferPointer { lengthPointer in
                    body(Int32(arguments.count), argvPointer.baseAddress, lengthPointer.baseAddress)
                }
            }
        }
    }

    public func check() -> Bool {
        (try? command(["PING"])) == .status("PONG")
    }

    private func checkStatus(_ reply: RedisReply) throws {
        if case .error(let message) = reply { throw RedisError(.command, message) }
    }

    static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
