/// The wait before the next attempt to reach a server that failed: doubling from
/// `initial` up to `maximum`, back to `initial` once an attempt succeeds. Shared by the
/// threads that hold a connection of their own (`ReconnectingThread`, the log tailer, the
/// catch-up reader, the presence thread).
public struct Backoff: Sendable {
    public let initial: Duration
    public let maximum: Duration
    public private(set) var current: Duration

    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(2)) {
        self.initial = initial
        self.maximum = maximum
        current = initial
    }

    /// An attempt failed: the wait before the next one (the one after will be longer).
    public mutating func failed() -> Duration {
        defer { current = min(current * 2, maximum) }
        return current
    }

    public mutating func succeeded() {
        current = initial
    }
}
