import Foundation
import Testing

/// `roboscope migrate` during a failover: the URL can reach a server that is read-only
/// (the former primary, restarted as a standby). The migration must wait for a writable
/// primary, as it waits for an unreachable one, not end with "cannot execute CREATE
/// TABLE in a read-only transaction" (seen ending frozen-disk runs of the cluster).
@Suite struct MigrateOnReadOnlyTests {
    @Test func migrateWaitsWhileTheDatabaseIsReadOnlyAndAppliesOnceItIsWritable() async throws {
        let name = "rbtest_readonly_\(UInt32.random(in: 0...UInt32.max))"
        let admin = try TestDatabase.connect(TestDatabase.url(of: "postgres"))
        try admin.execute("CREATE DATABASE \(name)")
        // What a standby answers every write with (SQLSTATE 25006), for new connections.
        try admin.execute("ALTER DATABASE \(name) SET default_transaction_read_only = on")
        let url = TestDatabase.url(of: name)

        let log = FileManager.default.temporaryDirectory.appendingPathComponent("roboscope-migrate-\(name).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let process = Process()
        process.executableURL = ServerProcess.binary
        process.arguments = [
            "migrate", "--database-url", TestDatabase.patient(url), "--schema-dir", TestDatabase.schemaDirectory.path,
        ]
        let output = try FileHandle(forWritingTo: log)
        process.standardOutput = output
        process.standardError = output
        try process.run()
        ChildProcesses.register(process.processIdentifier)
        func said() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

        try await eventually("migrate waiting for a writable primary", within: 30) {
            let waiting = said().contains("waiting for a writable primary")
            guard waiting || process.isRunning else {
                throw TestFailure("migrate gave up on a read-only database: \(said())")
            }
            return waiting
        }
        #expect(process.isRunning, "migrate gave up on a read-only database: \(said())")
        #expect(try scalar(url, "SELECT count(*) FROM pg_tables WHERE tablename = 'schema_migrations'") == 0)

        // The failover ends: new connections reach a writable server.
        try admin.execute("ALTER DATABASE \(name) RESET default_transaction_read_only")
        let status = await process.exitStatus()
        #expect(status == 0, "\(said())")
        #expect(said().contains("applied migrations"), "\(said())")
        #expect(try scalar(url, "SELECT count(*) FROM public.schema_migrations") > 0)
        try? FileManager.default.removeItem(at: log)
    }
}
