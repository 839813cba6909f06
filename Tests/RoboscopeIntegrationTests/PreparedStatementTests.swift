import Testing
@testable import RoboscopePostgres

/// Statements run with `query(prepared:)` are prepared once per connection and give
/// what `query` gives; errors come out the same way; past the bound they still run.
@Suite struct PreparedStatementTests {
    @Test func aPreparedStatementIsPreparedOnceAndRunsWithEachCallsParameters() throws {
        let connection = try TestDatabase.connect(TestDatabase.url(of: "postgres"))
        let sql = "SELECT $1::bigint * 2"
        for value in Int64(1)...5 {
            #expect(try connection.query(prepared: sql, [value]).int64(0, 0) == value * 2)
        }
        let prepared = try connection.query("SELECT count(*) FROM pg_prepared_statements WHERE statement = $1", [sql])
        #expect(prepared.int64(0, 0) == 1)
    }

    @Test func aFailingStatementThrowsItsErrorAndTheConnectionStaysUsable() throws {
        let connection = try TestDatabase.connect(TestDatabase.url(of: "postgres"))
        for _ in 0..<2 {
            #expect {
                try connection.query(prepared: "SELECT 1 / $1::integer", [Int64(0)])
            } throws: { error in
                (error as? PGError)?.sqlState == "22012"
            }
        }
        #expect(try connection.query(prepared: "SELECT 1 / $1::integer", [Int64(1)]).int64(0, 0) == 1)
        #expect {
            try connection.query(prepared: "SELECT no_such_column", [])
        } throws: { error in
            (error as? PGError)?.sqlState == "42703"
        }
    }

    @Test func pastTheBoundStatementsRunUnprepared() throws {
        let connection = try TestDatabase.connect(TestDatabase.url(of: "postgres"))
        let count = PGConnection.maxPreparedStatements + 5
        for n in 0..<count {
            #expect(try connection.query(prepared: "SELECT \(n) + $1::integer", [Int64(1)]).int64(0, 0) == Int64(n + 1))
        }
        let prepared = try connection.query("SELECT count(*) FROM pg_prepared_statements")
        #expect(prepared.int64(0, 0) == Int64(PGConnection.maxPreparedStatements))
    }
}
