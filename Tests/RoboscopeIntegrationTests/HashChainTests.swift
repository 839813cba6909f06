import Foundation
import Testing
import RoboscopeDomain
import RoboscopePostgres

/// The log's hash chain: written at append, checked by `roboscope verify --chain`,
/// which names the first event someone edited or removed by hand.
@Suite(.serialized) struct HashChainTests {
    /// A database with a scripted history and no server left running.
    func history() async throws -> (url: String, connection: PGConnection) {
        let url = try await TestDatabase.fresh("chain")
        let server = try await ServerProcess(databaseURL: url)
        try await ProjectionTests.scriptedHistory(server.client)
        _ = await server.terminate()
        return (url, try TestDatabase.connect(url))
    }

    /// Runs `sql` with the append-only guard off, as someone with the table's keys would.
    /// Runs `roboscope verify --chain` on `url`: it exits with `status` and says each of `phrases`.
    func expectVerifyChain(
        _ url: String, status: Int32, says phrases: [String], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let verified = try await CommandRunner.roboscope(["verify", "--chain", "--database-url", url])
        #expect(verified.status == status, sourceLocation: sourceLocation)
        for phrase in phrases {
            #expect(verified.output.contains(phrase), "\(verified.output)", sourceLocation: sourceLocation)
        }
    }

    func tamper(_ connection: PGConnection, _ sql: String, _ parameters: [String?]) throws {
        try connection.transaction {
            try connection.query("ALTER TABLE eventlog.events DISABLE TRIGGER events_append_only")
            try connection.query(sql, parameters)
            try connection.query("ALTER TABLE eventlog.events ENABLE TRIGGER events_append_only")
        }
    }

    @Test func everyAppendedEventIsChainedAndTheChainChecksOut() async throws {
        let (url, connection) = try await history()
        let unchained = try connection.query(
            "SELECT count(*) FROM eventlog.events WHERE hash IS NULL OR length(hash) <> 32")
        #expect(unchained.int64(0, 0) == 0)
        try await expectVerifyChain(url, status: 0, says: ["intact"])
    }

    @Test func anEditedEventIsNamed() async throws {
        let (url, connection) = try await history()
        let target = try connection.query(
            """
            SELECT position FROM eventlog.events WHERE stream_type = 'marker' AND stream_version = 1 ORDER BY position
                LIMIT 1
            """
        ).int64(0, 0)!
        try tamper(
            connection,
            "UPDATE eventlog.events SET data = jsonb_set(data, '{label}', '\"forged\"') WHERE position = $1",
            [String(target)])
        try await expectVerifyChain(url, status: 1, says: ["broken link at position \(target) ", "does not match"])
    }

    @Test func aRemovedEventIsNamedAtTheNextOne() async throws {
        let (url, connection) = try await history()
        let row = try connection.query(
            """
            SELECT stream_type, stream_id::text, stream_version FROM eventlog.events e
            WHERE stream_version = 1 AND EXISTS (SELECT 1 FROM eventlog.events n WHERE n.stream_type = e.stream_type
                  AND n.stream_id = e.stream_id AND n.stream_version = 3)
            ORDER BY position LIMIT 1
            """)
        guard row.rowCount == 1 else { throw TestFailure("the scripted history has no stream with three events") }
        let (type, id) = (row.string(0, 0)!, row.string(0, 1)!)
        try tamper(
            connection,
            "DELETE FROM eventlog.events WHERE stream_type = $1 AND stream_id = $2::uuid AND stream_version = 2",
            [type, id])
        try await expectVerifyChain(
            url, status: 1, says: ["\(type):\(id) version 3", "version 2 of the stream is missing"])
    }

    @Test func verifyChecksTheAuditTrailsRoutesToo() async throws {
        let (url, connection) = try await history()
        #expect(try await CommandRunner.roboscope(["verify", "--database-url", url]).status == 0)
        let target = try connection.query("SELECT position FROM eventlog.events WHERE stream_type = 'marker' LIMIT 1")
            .int64(0, 0)!
        try tamper(
            connection, "UPDATE eventlog.events SET work_session_id = gen_random_uuid() WHERE position = $1",
            [String(target)])
        let verified = try await CommandRunner.roboscope(["verify", "--database-url", url])
        #expect(verified.status == 1)
        #expect(
            verified.output.contains("eventlog.events (audit routes) \(target): work_session_id: live"),
            "\(verified.output)")
    }
    /// The append hashes an event itself when its stream's previous event is stored (or it
    /// starts the stream), and leaves one that follows an earlier event of the same batch
    /// to the trigger: a batch mixing both chains as one event at a time would.
    @Test func aBatchThatStartsAStreamAndContinuesAStoredOneChainsEveryEvent() async throws {
        let url = try await TestDatabase.fresh("chain_batch")
        let server = try await ServerProcess(databaseURL: url)
        let space = try await Fixtures(client: server.client).space()
        _ = await server.terminate()
        let connection = try TestDatabase.connect(url)
        let stored = Fixtures.id(space)
        let fresh = UUID().uuidString.lowercased()
        func event(_ stream: String, _ type: String, _ expected: String, _ name: String) -> String {
            """
            {"event_id": "\(UUID().uuidString.lowercased())", "stream_type": "space", "stream_id": "\(stream)",
             "expected_version": \(expected), "type": "\(type)", "metadata": {"actor": "test"},
             "data": {"id": "\(stream)", "key": "\(name)", "name": "\(name)", "meta": {}, "active": true, "version": 1,
                      "scan_url": null, "description": null, "preview_url": null, "ml_model_url": null,
                      "model_glb_url": null, "model_usdc_url": null,
                      "created_at": "2026-11-23T10:00:00.000000Z", "updated_at": "2026-11-23T10:00:00.000000Z"}}
            """
        }
        let batch = """
            {"locks": [], "events": [
                \(event(fresh, "space.created", "0", "new-1")),
                \(event(stored, "space.updated", "null", "stored-2")),
                \(event(fresh, "space.updated", "null", "new-2")),
                \(event(fresh, "space.updated", "null", "new-3")),
                \(event(stored, "space.updated", "null", "stored-3"))]}
            """
        try connection.transaction { _ = try connection.query("SELECT * FROM eventlog.append($1::jsonb)", [batch]) }

        let versions = try connection.query(
            """
            SELECT string_agg(stream_version::text, ',' ORDER BY position) FROM eventlog.events
            WHERE stream_id IN ($1::uuid, $2::uuid)
            """, [fresh, stored])
        #expect(versions.string(0, 0) == "1,1,2,2,3,3", "the stored space's create, then the batch in its order")
        // Each event's time is taken once, in the batch's order: a time cut never holds an
        // event of the batch without the ones before it.
        let backwards = try connection.query(
            """
            SELECT count(*) FROM (SELECT recorded_at < lag(recorded_at) OVER (ORDER BY position) AS back
                                  FROM eventlog.events) AS steps WHERE back
            """)
        #expect(backwards.int64(0, 0) == 0)
        try await expectVerifyChain(url, status: 0, says: ["intact"])
    }
}
