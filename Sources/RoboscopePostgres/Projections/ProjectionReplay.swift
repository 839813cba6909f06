/// Folds the whole log, in position order, into whichever tables `spaces`,
/// `work_sessions`, `markers` and `marker_details` name on the connection (the live
/// ones, or verify's temporary copies). Chunks keep memory flat on a long log.
enum ProjectionReplay {
    static let chunkSize = 20_000

    /// Returns how many events were folded; `progress` hears the running count.
    static func replay(on connection: PGConnection, progress: (Int64) -> Void = { _ in }) throws -> Int64 {
        var after: Int64 = 0
        var folded: Int64 = 0
        while true {
            let result = try connection.query(
                """
                SELECT eventlog.project(coalesce(array_agg(e ORDER BY e.position), '{}')), max(e.position)
                FROM eventlog.events e
                WHERE e.position > $1 AND e.position <= (
                    SELECT max(p.position) FROM (
                        SELECT position FROM eventlog.events WHERE position > $1 ORDER BY position LIMIT $2
                    ) p)
                """,
                [String(after), String(chunkSize)]
            )
            let count = result.int64(0, 0) ?? 0
            guard count > 0, let last = result.int64(0, 1) else { return folded }
            folded += count
            after = last
            progress(folded)
        }
    }
}
