import RoboscopePostgres

/// Where live delivery stands, and what the tailer reads next.
///
/// The cursor only moves forward: to the last event handed to the shards, or, while
/// nobody here subscribes to anything, to the log's head without reading events (a
/// subscription granted later starts from the cursor, so nothing is missed). A full
/// batch means more may be waiting: read again before sleeping.
///
/// Pure: the tailer runs the reads a step asks for and reports what came back.
struct LiveSequence {
    enum Step: Equatable {
        /// Nobody subscribes here: read the log's head and `skipped(to:)` it.
        case skipToHead
        /// Read up to `batchSize` events after this cursor, then report `delivered`.
        case read(after: LogCursor)
        /// Caught up: wait for a notification or the next poll.
        case wait
    }

    let batchSize: Int
    private(set) var cursor: LogCursor?

    init(batchSize: Int, cursor: LogCursor? = nil) {
        self.batchSize = batchSize
        self.cursor = cursor
    }

    /// The first head read on a connection, if none is known (a reconnect keeps the
    /// cursor it had, so nothing is lost or repeated across it).
    mutating func connected(head: LogCursor) {
        if cursor == nil { cursor = head }
    }

    /// What to do after waking.
    func next(anyoneSubscribed: Bool) -> Step {
        guard let cursor else { return .wait }
        return anyoneSubscribed ? .read(after: cursor) : .skipToHead
    }

    mutating func skipped(to head: LogCursor) {
        if let current = cursor, head > current { cursor = head }
    }

    /// A read returned `count` events, the last at `last`.
    mutating func delivered(count: Int, last: LogCursor?) -> Step {
        if let last, let current = cursor, last > current { cursor = last }
        guard count >= batchSize, let cursor else { return .wait }
        return .read(after: cursor)
    }
}
