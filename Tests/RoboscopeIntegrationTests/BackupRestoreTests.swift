import Foundation
import Testing
import RoboscopeDomain
import RoboscopePostgres

/// The documented backup and restore of the event log (deploy/backup, docs/operations.md):
/// dump, restore into an empty database, rebuild, verify; the restored service serves
/// the same state, appends after the last position and streams the whole history.
@Suite(.serialized) struct BackupRestoreTests {
    /// A source database with some history, including refused writes (aborted inserts
    /// leave the table's physical order different from position order).
    static func source() async throws -> (url: String, session: String, markers: JSONValue) {
        let url = try await TestDatabase.fresh("backup_source")
        let server = try await ServerProcess(databaseURL: url)
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        var ids: [String] = []
        for _ in 0..<6 { ids.append(Fixtures.id(try await fixtures.marker(in: session))) }
        _ = try await server.client.patch("/api/v1/markers/\(ids[0])", ["label": "moved", "p1": [5, 0, 5]])
        #expect(
            try await server.client.patch("/api/v1/markers/\(ids[1])", ["label": "stale", "version": 9]).status == 409)
        #expect(try await server.client.delete("/api/v1/markers/\(ids[2])").status == 204)
        _ = try await server.client.post("/api/v1/locks/\(Fixtures.id(session))", ["ttl_seconds": 5])
        let markers = try await server.client.get("/api/v1/markers?work_session_id=\(Fixtures.id(session))").json
        #expect(await server.terminate() == 0)
        return (url, Fixtures.id(session), markers)
    }

    static func dump(_ url: String) async throws -> URL {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("events-\(UUID()).copy")
        let dumped = try await CommandRunner.script("deploy/backup/dump-events", [url, file.path])
        #expect(dumped.status == 0, "\(dumped.output)")
        return file
    }

    @Test func aRestoredLogServesTheSameStateAndCarriesOn() async throws {
        let (sourceURL, session, markers) = try await Self.source()
        let file = try await Self.dump(sourceURL)
        defer { try? FileManager.default.removeItem(at: file) }

        let target = try await TestDatabase.fresh("backup_target")
        let restored = try await CommandRunner.script("deploy/backup/restore-events", [target, file.path])
        #expect(restored.status == 0, "\(restored.output)")
        #expect(try await CommandRunner.roboscope(["rebuild", "--database-url", target]).status == 0)
        let chain = try await CommandRunner.roboscope(["verify", "--chain", "--database-url", target])
        #expect(chain.status == 0 && chain.output.contains("intact"), "\(chain.output)")
        let verify = try await CommandRunner.roboscope(["verify", "--database-url", target])
        #expect(verify.status == 0, "\(verify.output)")
        // A second restore into a non-empty log is refused.
        #expect(try await CommandRunner.script("deploy/backup/restore-events", [target, file.path]).status != 0)

        let source = try TestDatabase.connect(sourceURL)
        let copy = try TestDatabase.connect(target)
        let compare = """
            SELECT position, event_id, encode(hash, 'hex'), space_id, work_session_id, tenant
            FROM eventlog.events ORDER BY position
            """
        let (before, after) = (try source.query(compare), try copy.query(compare))
        #expect(before.rowCount == after.rowCount && before.rowCount > 0)
        for row in 0..<before.rowCount {
            #expect((0..<6).map { before.string(row, $0) } == (0..<6).map { after.string(row, $0) }, "row \(row)")
        }

        let server = try await ServerProcess(databaseURL: target)
        #expect(try await server.client.get("/api/v1/markers?work_session_id=\(session)").json == markers)
        // New events continue after the restored ones.
        let last = try copy.query("SELECT max(position) FROM eventlog.events").int64(0, 0)!
        _ = try await Fixtures(client: server.client).marker(in: ["id": .string(session)])
        #expect(try copy.query("SELECT max(position) FROM eventlog.events").int64(0, 0)! > last)
        // The gateway streams the restored history from the start (the restore's own
        // transaction id, not the source cluster's, orders it).
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "subscribe", "topic": .string("work_session:\(session)"), "since": 0])
        _ = try await socket.next(op: "subscribed")
        var positions: [Int64] = []
        while positions.last ?? 0 <= last {
            let event = try await socket.next(op: "event")
            positions.append(event["position"]?.int ?? -1)
        }
        #expect(positions == positions.sorted() && positions.count >= 10)
        #expect(await server.terminate() == 0)
    }

    /// A file dumped before events named their tenant (without the last two columns, tenant
    /// and tenant_seq) restores with each event given its space's tenant and its number in
    /// the tenant's log, as the migrations gave the stored ones; appends carry on after them.
    @Test func aDumpOfTheLastReleaseRestoresWithItsTenants() async throws {
        let (sourceURL, _, _) = try await Self.source()
        let file = try await Self.dump(sourceURL)
        defer { try? FileManager.default.removeItem(at: file) }
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { line in
            line.split(separator: "\t", omittingEmptySubsequences: false).dropLast(2).joined(separator: "\t")
        }
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)

        let target = try await TestDatabase.fresh("backup_before_tenant")
        let restored = try await CommandRunner.script("deploy/backup/restore-events", [target, file.path])
        #expect(restored.status == 0, "\(restored.output)")
        #expect(try await CommandRunner.roboscope(["rebuild", "--database-url", target]).status == 0)
        let verify = try await CommandRunner.roboscope(["verify", "--database-url", target])
        #expect(verify.status == 0, "\(verify.output)")
        let copy = try TestDatabase.connect(target)
        let unnamed = try copy.query("SELECT count(*) FROM eventlog.events WHERE tenant IS DISTINCT FROM 'default'")
        #expect(unnamed.int64(0, 0) == 0)
        let numbered = try copy.query(
            """
            SELECT count(*), count(*) FILTER (WHERE tenant_seq = n), (SELECT size FROM eventlog.tenant_logs)
            FROM (SELECT tenant_seq, row_number() OVER (ORDER BY position) AS n FROM eventlog.events) e
            """)
        #expect(numbered.int64(0, 0) == numbered.int64(0, 1) && numbered.int64(0, 0) == numbered.int64(0, 2))
    }

    /// Verifiable history survives a dump and a restore (docs/operations.md): each event
    /// keeps its number in its tenant's log, the appends' signatures, checkpoints and stored
    /// subtrees come along, and a server of the same deployment and key carries on: its
    /// appends continue the log, its checkpointer signs again (the witness in Redis sees a
    /// log that grew, not one rolled back), and `roboscope-client verify --events` passes.
    @Test func aRestoredLogStillVerifiesAndItsDeploymentCarriesOn() async throws {
        let sourceURL = try await TestDatabase.fresh("backup_signed")
        let deployment = TestHistoryKey.deployment(of: sourceURL)
        let signing = [
            "--signing-key-file", try TestHistoryKey.path(), "--checkpoint-interval", "0.2", "--deployment-name",
            deployment,
        ]
        let source = try await ServerProcess(databaseURL: sourceURL, extraArguments: signing)
        let fixtures = Fixtures(client: source.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        for _ in 0..<5 { _ = try await fixtures.marker(in: session) }
        let size = try TestDatabase.connect(sourceURL).query("SELECT size FROM eventlog.tenant_logs").int64(0, 0) ?? 0
        try await eventually("a checkpoint covers the source's \(size) events") {
            try TestDatabase.connect(sourceURL).query("SELECT coalesce(max(size), 0) FROM eventlog.checkpoints")
                .int64(0, 0) == size
        }
        #expect(await source.terminate() == 0)
        let file = try await Self.dump(sourceURL)
        defer {
            for suffix in ["", ".append_signatures", ".checkpoints", ".merkle_nodes"] {
                try? FileManager.default.removeItem(atPath: file.path + suffix)
            }
        }

        let target = try await TestDatabase.fresh("backup_signed_target")
        let restored = try await CommandRunner.script("deploy/backup/restore-events", [target, file.path])
        #expect(restored.status == 0, "\(restored.output)")
        #expect(try await CommandRunner.roboscope(["rebuild", "--database-url", target]).status == 0)
        let copy = try TestDatabase.connect(target)
        #expect(try copy.query("SELECT size FROM eventlog.tenant_logs").int64(0, 0) == size)

        let server = try await ServerProcess(databaseURL: target, extraArguments: signing)
        _ = try await Fixtures(client: server.client).marker(in: session)
        let grown = try #require(try copy.query("SELECT size FROM eventlog.tenant_logs").int64(0, 0))
        #expect(grown > size)
        #expect(try copy.query("SELECT max(tenant_seq) FROM eventlog.events").int64(0, 0) == grown)
        try await eventually("the restored deployment signs a checkpoint of its grown log") {
            try copy.query("SELECT coalesce(max(size), 0) FROM eventlog.checkpoints").int64(0, 0) == grown
        }
        let integrity = try await server.client.get("/api/v1/integrity")
        #expect(integrity.json["intact"] == .bool(true), "\(integrity.json)")
        #expect(integrity.json["signatures"]?["first_invalid"] == .null, "\(integrity.json)")
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("rbverify-\(UUID())").path
        let verify = try await CommandRunner.run(
            ClientProcess.binary,
            [
                "verify", "--url", "http://127.0.0.1:\(server.port)", "--state", state, "--key",
                TestHistoryKey.verifier(sourceURL).description, "--events",
            ])
        #expect(verify.status == 0, "\(verify.output)")
        #expect(await server.terminate() == 0)
    }

    @Test func anEventEditedInTheBackupIsNamedAfterTheRestore() async throws {
        let (sourceURL, _, _) = try await Self.source()
        let file = try await Self.dump(sourceURL)
        defer { try? FileManager.default.removeItem(at: file) }
        var lines = try String(contentsOf: file, encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false
        ).map(String.init)
        let index = try #require(lines.firstIndex { $0.contains("\tmarker.updated\t") })
        lines[index] = lines[index].replacingOccurrences(of: "moved", with: "MOVED")
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)

        let target = try await TestDatabase.fresh("backup_tampered")
        #expect(try await CommandRunner.script("deploy/backup/restore-events", [target, file.path]).status == 0)
        let chain = try await CommandRunner.roboscope(["verify", "--chain", "--database-url", target])
        #expect(chain.status != 0)
        #expect(chain.output.contains("broken link"), "\(chain.output)")
    }
}
