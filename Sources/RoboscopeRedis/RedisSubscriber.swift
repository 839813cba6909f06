import CHiredis

/// A connection in subscribe mode (PSUBSCRIBE): the owner waits on `socket` with
/// `poll` and calls `messages()` when it is readable, so nothing blocks past the
/// data that is there.
public final class RedisSubscriber {
    public struct Message: Sendable, Equatable {
        public var channel: String
        public var payload: String
    }

    private let connection: RedisConnection

    /// Connects to the endpoint's master (asking the Sentinels, when it has them) and
    /// subscribes to every channel matching `pattern`.
    public init(_ endpoint: RedisEndpoint, pattern: String) throws {
        connection = try endpoint.connect()
        _ = try connection.command(["PSUBSCRIBE", pattern])
    }

    /// The same for several patterns (one confirmation each).
    public init(_ endpoint: RedisEndpoint, patterns: [String]) throws {
        connection = try endpoint.connect()
        for pattern in patterns {
            _ = try connection.command(["PSUBSCRIBE", pattern])
        }
    }

    /// The same at a fixed address (a Sentinel's announcements, a test's server).
    public convenience init(_ url: RedisURL, pattern: String) throws {
        try self.init(RedisEndpoint(url: url), pattern: pattern)
    }

    public var socket: Int32 { connection.context.pointee.fd }

    /// Reads what arrived and returns the messages it completes.
    public func messages() throws -> [Message] {
        guard redisBufferRead(connection.context) == REDIS_OK else {
            throw RedisError(.connection, RedisConnection.errorText(connection.context))
        }
        var messages: [Message] = []
        while true {
            var raw: UnsafeMutableRawPointer?
            guard redisGetReplyFromReader(connection.context, &raw) == REDIS_OK else {
                throw RedisError(.connection, RedisConnection.errorText(connection.context))
            }
            guard let raw else { return messages }
            let reply = RedisReply(UnsafePointer(raw.assumingMemoryBound(to: redisReply.self)))
            freeReplyObject(raw)
            // ["pmessage", pattern, channel, payload]
            if let parts = reply.array, parts.count == 4, parts[0].string == "pmessage",
                let channel = parts[2].string, let payload = parts[3].string
            {
                messages.append(Message(channel: channel, payload: payload))
            }
        }
    }
}
