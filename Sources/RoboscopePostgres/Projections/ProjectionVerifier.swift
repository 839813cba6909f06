import Foundation
import RoboscopeDomain

/// Replays the log into scratch tables and compares them with the live ones row by
/// row, all in one snapshot, so appends running meanwhile cannot cause differences.
public struct ProjectionVerifier {
    let connection: PGConnection

    public init(connection: PGConnection) {
        self.connection = connection
    }

    /// One row that differs between the live table and the replayed one.
    public struct Difference: Sendable, CustomStringConvertible {
        public var table: String
        public var key: String
        /// nil when the row is missing on that side.
        public var live: JSONObject?
        public var replayed: JSONObject?

        public var description: String {
            switch (live, replayed) {
            case (nil, _): return "\(table) \(key): missing from the live table (the log has it)"
            case (_, nil): return "\(table) \(key): in the live table but not in the log"
            case (let live?, let replayed?):
                let fields = Set(live.keys).union(replayed.keys).sorted().filter { live[$0] != replayed[$0] }
                let changes = fields.map { field in
                    "\(field): live \(Self.render(live[field])) vs log \(Self.render(replayed[field]))"
                }
                return "\(table) \(key): " + changes.joined(separator: "; ")
            }
        }

        static func render(_ value: JSONValue?) -> String {
            guard let value else { return "(absent)" }
            return String(decoding: value.canonicalJSON, as: UTF8.self)
        }
    }

    public struct Report: Sendable {
        public var eventsReplayed: Int64
        public var rowsCompared: [String: Int64]
        public var differences: [Difference]
    }

    public func verify(progress: (ReplayProgress) -> Void = { _ in }) throws -> Report {
        // One snapshot for the replay and the comparison; nothing is kept.
        try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        defer { if !connection.isBroken { _ = try? connection.execute("ROLLBACK") } }
        do {
            // Temporary tables of the same names shadow the live ones for eventlog.project().
            for table in ProjectionTables.all {
                try connection.execute(
                    "CREATE TEMPORARY TABLE \(table.name) (LIKE public.\(table.name) INCLUDING ALL) "
                )
            }
            let replayed = try ProjectionReplay.replay(on: connection, progress: progress)
            var differences: [Difference] = []
            var counts: [String: Int64] = [:]
            for table in ProjectionTables.all {
                let result = try connection.query(
                    """
                    SELECT coalesce(l.\(table.key), r.\(table.key))::text, to_jsonb(l), to_jsonb(r)
                    FROM public.\(table.name) l FULL JOIN pg_temp.\(table.name) r ON l.\(table.key) = r.\(table.key)
                    WHERE to_jsonb(l) IS DISTINCT FROM to_jsonb(r)
                    ORDER BY 1
                    """)
                for row in 0..<result.rowCount {
                    let decode = { (column: Int) -> JSONObject? in
                        result.bytes(row, column).flatMap { try? JSONParser.parse($0).objectValue }
                    }
                    differences.append(
                        Difference(
                            table: table.name, key: result.string(row, 0) ?? "?", live: decode(1), replayed: decode(2)))
                }
                counts[table.name] = try connection.query("SELECT count(*) FROM public.\(table.name)").scalar(
                    table.name)
            }
            // The audit trail is read from the log itself; what it stores besides the
            // events is each event's route (its work session and space) and its number
            // on each topic, each checked against what the streams and positions give.
            for (check, table) in [
                ("misrouted_events", "eventlog.events (audit routes)"),
                ("topic_sequence_breaks", "eventlog.events (topic numbers)"),
            ] {
                let found = try connection.query(
                    "SELECT position::text, stored::text, expected::text FROM eventlog.\(check)()")
                for row in 0..<found.rowCount {
                    let decode = { (column: Int) -> JSONObject? in
                        found.bytes(row, column).flatMap { try? JSONParser.parse($0).objectValue }
                    }
                    differences.append(
                        Difference(table: table, key: found.string(row, 0) ?? "?", live: decode(1), replayed: decode(2))
                    )
                }
            }
            counts["eventlog.events (audit routes)"] = replayed
            counts["eventlog.events (topic numbers)"] = replayed
            return Report(eventsReplayed: replayed, rowsCompared: counts, differences: differences)
        }
    }
}
