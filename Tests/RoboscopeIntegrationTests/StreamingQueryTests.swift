import Testing
@testable import RoboscopePostgres

/// Rows handed over one by one as they arrive (the changes feed renders while Postgres
/// still produces the page): all of them in order, and a failure on either side leaves
/// the connection ready for the next statement.
@Suite struct StreamingQueryTests {
    struct Stop: Error {}

    @Test func everyRowArrivesInOrder() throws {
        let connection = try TestDatabase.connect(TestDatabase.url(of: "postgres"))
        var seen: [Int64] = []
        try connection.stream("SELECT g FROM generate_series(1, $1::integer) g ORDER BY g", [Int64(2000)]) { row in
            #expect(row.rowCount == 1)
            seen.append(row.int64(0, 0)!)
        }
        #expect(seen == Array(1...2000))
        try connection.stream("SELECT 1 WHERE false") { _ in Issue.record("no row expected") }
    }

    @Test func aReaderThatStopsLeavesTheConnectionUsable() throws {
        let connection = try TestDatabase.connect(TestDatabase.url(of: "postgres"))
        var count = 0
        #expect(throws: Stop.self) {
            try connection.stream("SELECT g FROM generate_series(1, 5000) g") { _ in
                count += 1
                if count == 10 { throw Stop() }
            }
        }
        #expect(count == 10, "no row is handed over after the reader threw")
        #expect(try connection.query("SELECT 41 + 1").int64(0, 0) == 42)
    }

    @Test func anErrorAfterSomeRowsIsThrownAndTheConnectionStaysUsable() throws {
        let connection = try TestDatabase.connect(TestDatabase.url(of: "postgres"))
        var count = 0
        #expect {
            try connection.stream("SELECT 1 / (1000 - g) FROM generate_series(1, 2000) g") { _ in count += 1 }
        } throws: { error in
            (error as? PGError)?.sqlState == "22012"
        }
        #expect(count > 0 && count < 1000, "the rows before the failure arrived")
        #expect(try connection.query("SELECT 42").int64(0, 0) == 42)
    }
}
