import Foundation

/// Rebuilds the current-state tables from the log alone, in one transaction:
/// readers see the old tables until the new ones commit, and appends wait.
public struct ProjectionRebuilder {
    let connection: PGConnection

    public init(connection: PGConnection) {
        self.connection = connection
    }

    /// Returns how many events were folded.
    @discardableResult
    public func rebuild(progress: (ReplayProgress) -> Void = { _ in }) throws -> Int64 {
        try connection.transaction {
            let tables = ProjectionTables.all.map { "public.\($0.name)" }.joined(separator: ", ")
            try connection.execute("LOCK TABLE \(tables) IN ACCESS EXCLUSIVE MODE")
            try connection.execute("TRUNCATE \(tables)")
            return try ProjectionReplay.replay(on: connection, progress: progress)
        }
    }
}
