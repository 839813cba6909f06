import Foundation
import Testing
import RoboscopePostgres

/// The projections name their tables' columns by hand (Postgres has no "every column"
/// form of `ON CONFLICT ... DO UPDATE SET`), so a column added by a migration and
/// forgotten there would keep the value of the entity's first event forever. Every
/// column list of the fold functions must be its table's columns, as the catalog has them.
@Suite struct ProjectionColumnsTests {
    static let files = ["project.sql", "project_all.sql", "project_locks.sql"]

    /// Columns an update leaves alone on purpose, and why.
    static let keptOnUpdate: [String: Set<String>] = [
        // A space's tenant is named by its first event and never changes (DESIGN.md, tenancy).
        "spaces": ["tenant"]
    ]

    /// A column list written in a fold function.
    struct Written: CustomStringConvertible {
        var file: String
        var table: String
        var what: String
        var columns: Set<String>
        var description: String { "\(file): \(what) of \(table)" }
    }

    static func written() throws -> [Written] {
        let insert = try NSRegularExpression(pattern: #"INSERT INTO (\w+)\s*\(([^)]*)\)"#)
        let upsert = try NSRegularExpression(
            pattern: #"INSERT INTO (\w+)\b(?:(?!INSERT INTO).)*?ON CONFLICT \(([^)]*)\) DO UPDATE SET(.*?);"#,
            options: [.dotMatchesLineSeparators])
        var found: [Written] = []
        for file in files {
            let text = try String(
                contentsOf: TestDatabase.schemaDirectory.appendingPathComponent("functions/\(file)"), encoding: .utf8)
            let whole = NSRange(text.startIndex..., in: text)
            func group(_ match: NSTextCheckingResult, _ index: Int) -> String {
                String(text[Range(match.range(at: index), in: text)!])
            }
            func names(_ list: String) -> Set<String> {
                Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
            }
            for match in insert.matches(in: text, range: whole) {
                found.append(
                    Written(
                        file: file, table: group(match, 1), what: "the INSERT's list", columns: names(group(match, 2))))
            }
            for match in upsert.matches(in: text, range: whole) {
                let assigned = group(match, 3).split(separator: ",").map {
                    String($0.split(separator: "=")[0]).trimmingCharacters(in: .whitespacesAndNewlines)
                }
                let table = group(match, 1)
                found.append(
                    Written(
                        file: file, table: table, what: "the update's SET",
                        columns: Set(assigned).union(names(group(match, 2))).union(keptOnUpdate[table] ?? [])))
            }
        }
        return found
    }

    @Test func everyColumnListOfTheFoldsIsItsTablesColumns() async throws {
        let url = try await TestDatabase.fresh("projection_columns")
        let connection = try TestDatabase.connect(url)
        let written = try Self.written()
        // The marker, its details, the locks and the spaces' tenants, each both ways where it has both.
        #expect(written.count >= 8, "the lists found: \(written)")
        for list in written {
            let result = try connection.query(
                """
                SELECT column_name::text FROM information_schema.columns
                WHERE table_schema = 'public' AND table_name = $1 AND is_generated = 'NEVER'
                """, [list.table])
            let columns = Set((0..<result.rowCount).compactMap { result.string($0, 0) })
            #expect(!columns.isEmpty, "\(list): no table \(list.table)")
            #expect(
                list.columns == columns,
                "\(list): misses \(columns.subtracting(list.columns)), names \(list.columns.subtracting(columns))")
        }
    }
}
