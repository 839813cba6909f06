/// A failure talking to Redis: the connection (down, timed out) or the command.
public struct RedisError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable { case connection, command }
    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "redis \(kind == .connection ? "connection" : "command") error: \(message)" }
}
