/// Folds the whole log, in position order, into whichever tables `spaces`,
/// `work_sessions`, `markers` and `marker_details` name on the connection (the live
/// ones, or verify's temporary copies). Chunks of positions keep memory flat.
enum ProjectionReplay {
    static let chunkSize: Int64 = 20_000

    /// Returns how many events were folded; `progress` hears the running count.
    static func replay(on connection: PGConnection, progress: (ReplayProgress) -> Void = { _ in }) throws -> Int64 {
        let head = try connection.query("SELECT coalesce(max(position), 0) FROM eventlog.events").scalar("eventlog.events")
        var first: Int64 = 1
        var folded: Int64 = 0
        while first <= head {
            let last = min(head, first + chunkSize - 1)
            folded += try connection.query("SELECT eventlog.project($1, $2)", [first, last]).scalar("eventlog.project")
            progress(ReplayProgress(eventsFolded: folded, positionsDone: last, positionsTotal: head))
            first = last + 1
        }
        return folded
    }
}

/// How far a replay of the log has come (positions are dense but for aborted appends).
public struct ReplayProgress: Sendable {
    public var eventsFolded: Int64
    public var positionsDone: Int64
    public var positionsTotal: Int64

    public var fraction: Double { positionsTotal > 0 ? Double(positionsDone) / Double(positionsTotal) : 1 }
}
