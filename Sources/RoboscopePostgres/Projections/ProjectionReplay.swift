/// Folds the whole log into whichever tables `spaces`, `work_sessions`, `markers`,
/// `marker_details` and `session_locks` name on the connection (the live ones, emptied,
/// or verify's temporary copies), through `eventlog.project_all()`: one set-based pass
/// that writes each stream's final state.
enum ProjectionReplay {
    /// Returns how many events were folded; `progress` hears where the fold stands
    /// before and after (one statement does it all: there is no step in between).
    static func replay(on connection: PGConnection, progress: (ReplayProgress) -> Void = { _ in }) throws -> Int64 {
        let head = try connection.query("SELECT coalesce(max(position), 0) FROM eventlog.events").scalar(
            "eventlog.events")
        progress(ReplayProgress(eventsFolded: 0, positionsDone: 0, positionsTotal: head))
        let folded = try connection.query("SELECT eventlog.project_all()").scalar("eventlog.project_all")
        progress(ReplayProgress(eventsFolded: folded, positionsDone: head, positionsTotal: head))
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
