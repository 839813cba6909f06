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

    /// A file dumped before events named their tenant (no last column) restores with each
    /// event given its space's tenant, as the migration gave the stored ones.
    @Test func aDumpOfTheLastReleaseRestoresWithItsTenants() async throws {
        let (sourceURL, _, _) = try await Self.source()
        let file = try await Self.dump(sourceURL)
        defer { try? FileManager.default.removeItem(at: file) }
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { line in
            line.split(separator: "\t", omittingEmptySubsequences: false).dropLast().joined(separator: "\t")
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
