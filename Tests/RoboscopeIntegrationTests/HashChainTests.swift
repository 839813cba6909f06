import Foundation
import Testing
import RoboscopeDomain
import RoboscopePostgres

/// The log's hash chain: written at append, checked by `roboscope verify --chain`,
/// which names the first event someone edited or removed by hand.
@Suite(.serialized) struct HashChainTests {
    /// A database with a scripted history and no server left running.
    func history() async throws -> (url: String, connection: PGConnection) {
        let url = try TestDatabase.fresh("chain")
        let server = try await ServerProcess(databaseURL: url)
        try await ProjectionTests.scriptedHistory(server.client)
        _ = server.terminate()
        return (url, try TestDatabase.connect(url))
    }

    /// Runs `sql` with the append-only guard off, as someone with the table's keys would.
    func tamper(_ connection: PGConnection, _ sql: String, _ parameters: [String?]) throws {
        try connection.transaction {
            try connection.query("ALTER TABLE eventlog.events DISABLE TRIGGER events_append_only")
            try connection.query(sql, parameters)
            try connection.query("ALTER TABLE eventlog.events ENABLE TRIGGER events_append_only")
        }
    }

    @Test func everyAppendedEventIsChainedAndTheChainChecksOut() async throws {
        let (url, connection) = try await history()
        let unchained = try connection.query("SELECT count(*) FROM eventlog.events WHERE hash IS NULL OR length(hash) <> 32")
        #expect(unchained.int64(0, 0) == 0)
        let verified = try CommandRunner.roboscope(["verify", "--chain", "--database-url", url])
        #expect(verified.status == 0)
        #expect(verified.output.contains("intact"), "\(verified.output)")
    }

    @Test func anEditedEventIsNamed() async throws {
        let (url, connection) = try await history()
        let target = try connection.query("""
            SELECT position FROM eventlog.events WHERE stream_type = 'marker' AND stream_version = 1 ORDER BY position LIMIT 1
            """).int64(0, 0)!
        try tamper(connection, "UPDATE eventlog.events SET data = jsonb_set(data, '{label}', '\"forged\"') WHERE position = $1",
                   [String(target)])
        let verified = try CommandRunner.roboscope(["verify", "--chain", "--database-url", url])
        #expect(verified.status == 1)
        #expect(verified.output.contains("broken link at position \(target) "), "\(verified.output)")
        #expect(verified.output.contains("does not match"))
    }

    @Test func aRemovedEventIsNamedAtTheNextOne() async throws {
        let (url, connection) = try await history()
        let row = try connection.query("""
            SELECT stream_type, stream_id::text, stream_version FROM eventlog.events e
            WHERE stream_version = 1 AND EXISTS (SELECT 1 FROM eventlog.events n WHERE n.stream_type = e.stream_type
                  AND n.stream_id = e.stream_id AND n.stream_version = 3)
            ORDER BY position LIMIT 1
            """)
        guard row.rowCount == 1 else { throw TestFailure("the scripted history has no stream with three events") }
        let (type, id) = (row.string(0, 0)!, row.string(0, 1)!)
        try tamper(connection, "DELETE FROM eventlog.events WHERE stream_type = $1 AND stream_id = $2::uuid AND stream_version = 2",
                   [type, id])
        let verified = try CommandRunner.roboscope(["verify", "--chain", "--database-url", url])
        #expect(verified.status == 1)
        #expect(verified.output.contains("\(type):\(id) version 3"), "\(verified.output)")
        #expect(verified.output.contains("version 2 of the stream is missing"))
    }

    @Test func verifyChecksTheAuditTrailsRoutesToo() async throws {
        let (url, connection) = try await history()
        #expect(try CommandRunner.roboscope(["verify", "--database-url", url]).status == 0)
        let target = try connection.query("SELECT position FROM eventlog.events WHERE stream_type = 'marker' LIMIT 1").int64(0, 0)!
        try tamper(connection, "UPDATE eventlog.events SET work_session_id = gen_random_uuid() WHERE position = $1", [String(target)])
        let verified = try CommandRunner.roboscope(["verify", "--database-url", url])
        #expect(verified.status == 1)
        #expect(verified.output.contains("eventlog.events (audit routes) \(target): work_session_id: live"), "\(verified.output)")
    }
}
