import Foundation
import RoboscopePostgres
import Testing

/// Statements that cannot run on for nobody: a timeout per kind of statement, and a
/// report's statement cancelled in Postgres when its client goes away. A test
/// connection holds a lock the server's statement waits on, so "slow" is certain.
@Suite struct QueryBoundsTests {
    /// Holds `ACCESS EXCLUSIVE` on `table` until `release` (a transaction left open).
    final class TableLock: @unchecked Sendable {
        let connection: PGConnection

        init(_ databaseURL: String, table: String) async throws {
            connection = try await onOwnThread { () throws -> Handed<PGConnection> in
                let connection = try TestDatabase.connect(databaseURL)
                try connection.execute("BEGIN")
                try connection.execute("LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE")
                return Handed(connection)
            }.value
        }

        func release() async throws {
            let connection = Handed(connection)
            try await onOwnThread { () throws in _ = try connection.value.execute("ROLLBACK") }
        }
    }

    /// Backends of the server's database waiting for a lock in a statement whose text
    /// contains `marker` (the server's other work, the gateway's tailer, waits too).
    static func waitingOnLocks(_ databaseURL: String, in marker: String) async throws -> Int64 {
        try await onOwnThread {
            try PGConnectionForTests.query(
                databaseURL,
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND strpos(query, $1) > 0
                """, [marker])
        }
    }

    /// Only the audit trail's statement joins each event to the one before it.
    static let auditStatement = "LEFT JOIN eventlog.events p"

    @Test func aStatementPastItsTimeoutIs503AndFreesItsConnection() async throws {
        let (server, databaseURL) = try await LazyServer("statement_timeout") { ["--db-statement-timeout", "1"] }.get()
        let lock = try await TableLock(databaseURL, table: "public.spaces")
        let started = ContinuousClock.now
        let reply = try await server.client.get("/api/v1/spaces")
        let took = ContinuousClock.now - started
        #expect(reply.status == 503)
        #expect(reply.header("Retry-After") == "1")
        #expect(took >= .milliseconds(900) && took < .seconds(8), "cancelled by the 1-s timeout: \(took)")
        #expect(try await Self.waitingOnLocks(databaseURL, in: "spaces") == 0, "the statement no longer waits")
        try await lock.release()
        #expect(try await server.client.get("/api/v1/spaces").status == 200, "the connection serves again")
        await server.terminate()
    }

    @Test func aReportWhoseClientLeftIsCancelledInPostgres() async throws {
        let (server, databaseURL) = try await LazyServer("report_cancel") { ["--report-timeout", "120"] }.get()
        let lock = try await TableLock(databaseURL, table: "eventlog.events")
        let socket = try WebSocketClient.connect(port: server.port)
        let request = Array("GET /api/v1/audit?limit=10 HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        #expect(write(socket, request, request.count) == request.count)
        try await eventually("the audit statement waits on the lock", within: 20) {
            try await Self.waitingOnLocks(databaseURL, in: Self.auditStatement) == 1
        }
        close(socket)
        // Long before its 120-s timeout: cancelled because nobody waits for its answer.
        try await eventually("the statement was cancelled", within: 10) {
            try await Self.waitingOnLocks(databaseURL, in: Self.auditStatement) == 0
        }
        try await lock.release()
        #expect(try await server.client.get("/api/v1/audit?limit=1").status == 200)
        await server.terminate()
    }
}
