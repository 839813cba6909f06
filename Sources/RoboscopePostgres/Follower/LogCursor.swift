/// Where a follower of the log stands: the last event it delivered.
///
/// Followers read in (transaction id, position) order and only events of
/// transactions older than every transaction still running (the snapshot's xmin).
/// A transaction that commits late therefore never lands behind the cursor, an
/// aborted one leaves nothing to wait for, and no timeout ever skips an event.
public struct LogCursor: Hashable, Comparable, Sendable {
    public var transactionID: UInt64
    public var position: Int64

    public static let start = LogCursor(transactionID: 0, position: 0)

    /// Delivery order: by transaction, then position.
    public static func < (lhs: LogCursor, rhs: LogCursor) -> Bool {
        (lhs.transactionID, lhs.position) < (rhs.transactionID, rhs.position)
    }

    public init(transactionID: UInt64, position: Int64) {
        self.transactionID = transactionID
        self.position = position
    }
}
