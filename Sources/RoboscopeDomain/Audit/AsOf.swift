/// A moment in the log: a time (every event recorded at or before it) or a position
/// (every event at or before it). The `as_of` of time-travel reads.
public enum AsOf: Sendable, Equatable, CustomStringConvertible {
    case time(Timestamp)
    case position(Int64)

    /// Parses a non-negative position or an RFC 3339 time.
    public init?(_ text: String) {
        if let position = Int64(text) {
            guard position >= 0 else { return nil }
            self = .position(position)
        } else if let time = Timestamp(rfc3339: text) {
            self = .time(time)
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .time(let time): return time.formatted(.wire)
        case .position(let position): return "position \(position)"
        }
    }
}
