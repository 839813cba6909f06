import Testing
@testable import RoboscopePostgres

/// A database job's span names what its statements did (`db.operation`): each
/// statement's verb, and the stored function a `SELECT` calls.
@Suite struct StatementOperationTests {
    @Test func aStatementIsNamedByItsVerbAndTheFunctionItCalls() {
        #expect(PGConnection.operation(of: "BEGIN") == "BEGIN")
        #expect(PGConnection.operation(of: "  insert into markers (id) values ($1)") == "INSERT")
        #expect(PGConnection.operation(of: "\n\tWITH page AS (SELECT 1) SELECT * FROM page") == "WITH")
        #expect(
            PGConnection.operation(of: "SELECT event_position, event_hash FROM eventlog.append($1::jsonb)")
                == "SELECT eventlog.append")
        #expect(PGConnection.operation(of: "SELECT count(*) FROM markers WHERE id = $1") == "SELECT")
        #expect(PGConnection.operation(of: "SET statement_timeout = 5000") == "SET")
        #expect(PGConnection.operation(of: "") == "UNKNOWN")
        #expect(PGConnection.operation(of: "-- a comment") == "UNKNOWN")
    }
}
