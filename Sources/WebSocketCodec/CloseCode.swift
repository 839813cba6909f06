/// Why a connection closes: the status code of a close frame (RFC 6455 section 7.4)
/// with the reason text that goes with it. Kept as data, so every place that ends
/// a connection names one of these instead of spelling numbers.
public struct CloseCode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    public static let normal = CloseCode(1000)
    /// The server is shutting down (SIGTERM) or the peer went away.
    public static let goingAway = CloseCode(1001)
    public static let protocolError = CloseCode(1002)
    public static let unsupportedData = CloseCode(1003)
    /// Never sent in a frame: the close frame carried no status.
    public static let noStatus = CloseCode(1005)
    /// Text that is not UTF-8.
    public static let invalidPayload = CloseCode(1007)
    /// The client broke a rule of ours (limits, bad subscription use).
    public static let policyViolation = CloseCode(1008)
    /// A message larger than the configured limit.
    public static let messageTooBig = CloseCode(1009)
    public static let internalError = CloseCode(1011)
    /// The client could not keep up; it should reconnect and resume with `since`.
    public static let tryAgainLater = CloseCode(1013)
    /// Ours (docs/websocket.md): no token, an invalid one, or one that expired.
    public static let unauthorized = CloseCode(4001)
    /// Ours: a refreshed token names another subject or tenant.
    public static let forbidden = CloseCode(4003)

    /// Whether a peer may send this code in a close frame (section 7.4.1/7.4.2):
    /// 1004-1006 and 1015 are reserved for local use, 1016-2999 unassigned.
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014: return true
        case 3000...4999: return true
        default: return false
        }
    }

    public var description: String { String(rawValue) }
}
