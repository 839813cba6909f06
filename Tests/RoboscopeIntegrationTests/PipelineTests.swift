import Foundation
import Testing
@testable import RoboscopePostgres

/// Statements sent in one round trip (the signed append: `BEGIN` with the append, then
/// the signatures with `COMMIT`): results in order, a transaction begun in one stays open
/// for the next, and every failure (a statement's, the commit's) is the statement's own error, on
/// a connection that stays usable.
@Suite struct PipelineTests {
    /// A table of its own, whose key is checked at commit, dropped when `body` ends.
    func withTable(_ body: (PGConnection, String) throws -> Void) throws {
        let connection = try TestDatabase.connect(TestDatabase.url(of: "postgres"))
        let table = "pipeline_\(UUID().uuidString.prefix(8).lowercased())"
        try connection.execute("CREATE TABLE \(table) (k integer UNIQUE DEFERRABLE INITIALLY DEFERRED)")
        defer { _ = try? connection.execute("DROP TABLE \(table)") }
        try body(connection, table)
    }

    func count(_ table: String) throws -> Int64? {
        try TestDatabase.connect(TestDatabase.url(of: "postgres")).query("SELECT count(*) FROM \(table)").int64(0, 0)
    }

    @Test func aTransactionBegunInOnePipelineStaysOpenUntilTheCommitOfTheNext() throws {
        try withTable { connection, table in
            let first = try connection.pipeline(
                [.init("BEGIN"), .init("INSERT INTO \(table) VALUES ($1::integer) RETURNING k", [7])])
            #expect(first.count == 2)
            #expect(first[1].int64(0, 0) == 7)
            #expect(connection.isInTransaction && !connection.isBroken)
            #expect(try count(table) == 0, "not committed before the second pipeline")

            let second = try connection.pipeline(
                [.init("INSERT INTO \(table) VALUES ($1::integer) RETURNING k", [8]), .init("COMMIT")])
            #expect(second[0].int64(0, 0) == 8)
            #expect(!connection.isInTransaction && !connection.isBroken)
            #expect(try count(table) == 2)
            #expect(try connection.query("SELECT 42").int64(0, 0) == 42, "back to statements one at a time")
        }
    }

    @Test func aFailedStatementIsThrownAndTheOnesAfterItDoNotRun() throws {
        try withTable { connection, table in
            #expect {
                try connection.pipeline(
                    [
                        .init("BEGIN"), .init("SELECT 1 / $1::integer", [0]),
                        .init("INSERT INTO \(table) VALUES (1)"),
                    ])
            } throws: { error in
                (error as? PGError)?.sqlState == "22012"
            }
            #expect(!connection.isBroken)
            #expect(connection.isInTransaction, "the caller's transaction, failed, for it to roll back")
            try connection.execute("ROLLBACK")
            #expect(try count(table) == 0)
            #expect(try connection.query("SELECT 42").int64(0, 0) == 42)
        }
    }

    @Test func aCommitRefusedByAKeyCheckIsTheCommitsError() throws {
        try withTable { connection, table in
            try connection.pipeline(
                [.init("BEGIN"), .init("INSERT INTO \(table) VALUES (1)"), .init("INSERT INTO \(table) VALUES (1)")])
            #expect {
                try connection.pipeline([.init("COMMIT")])
            } throws: { error in
                (error as? PGError)?.sqlState == "23505" && (error as? PGError)?.constraint == "\(table)_k_key"
            }
            #expect(!connection.isInTransaction && !connection.isBroken)
            #expect(try count(table) == 0)
        }
    }

    @Test func aFailureBeforeTheCommitLeavesNothing() throws {
        try withTable { connection, table in
            try connection.pipeline([.init("BEGIN"), .init("INSERT INTO \(table) VALUES (1)")])
            #expect {
                try connection.pipeline(
                    [.init("INSERT INTO \(table) VALUES ($1::integer)", ["x"]), .init("COMMIT")])
            } throws: { error in
                (error as? PGError)?.sqlState == "22P02"
            }
            #expect(!connection.isBroken)
            if connection.isInTransaction { try connection.execute("ROLLBACK") }
            #expect(try count(table) == 0)
        }
    }
}
