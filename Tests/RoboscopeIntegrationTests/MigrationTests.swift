import Foundation
import Logging
import Testing
import RoboscopeDomain
@testable import RoboscopePostgres

/// Schema upgrades: a database migrated with the files released before functions moved
/// to schema/functions upgrades in place, and an applied migration that was edited
/// afterwards is refused.
@Suite struct MigrationTests {
    /// That release's migrations as it shipped them: an archive, since they are a record
    /// to restore, never code to edit or to read beside today's schema.
    static let archive = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/schema-0011.tar.gz")

    /// The archive's files, unpacked into a folder of their own.
    static func unpacked() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("schema-0011-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let tar = Process()
        tar.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        tar.arguments = ["tar", "-xzf", archive.path, "-C", folder.path]
        try tar.run()
        tar.waitUntilExit()
        guard tar.terminationStatus == 0 else { throw TestFailure("tar could not unpack \(archive.path)") }
        return folder
    }

    /// What the migrator of that release did: each file once, its name recorded.
    static func migrateAsReleased(_ connection: PGConnection) throws {
        let fixture = try unpacked()
        defer { try? FileManager.default.removeItem(at: fixture) }
        try connection.execute(
            """
            CREATE TABLE public.schema_migrations (
                version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
            """)
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.path).filter { $0.hasSuffix(".sql") }
            .sorted()
        for name in names {
            try connection.transaction {
                try connection.execute(try String(contentsOf: fixture.appendingPathComponent(name), encoding: .utf8))
                try connection.query(
                    "INSERT INTO public.schema_migrations (version) VALUES ($1)", [String(name.dropLast(4))])
            }
        }
    }

    /// An append as that release's service made it: its function takes metadata only on each event.
    static func appendAsReleased(_ batch: AppendBatch, on connection: PGConnection) throws {
        var document = BatchDocument(batch: batch, claim: nil, answer: nil)
        document.metadataOnEveryEvent = true
        try connection.query(
            "SELECT event_position FROM eventlog.append($1::jsonb)", [StorageJSON.encodeString(document)])
    }

    static func context(_ seconds: Int64) -> CommandContext {
        CommandContext(
            now: Timestamp(microsecondsSinceEpoch: 1_795_000_000_000_000 + seconds * 1_000_000),
            provenance: Provenance(actor: "upgrade", requestID: "r\(seconds)"))
    }

    static func empty() throws -> (url: String, connection: PGConnection) {
        let name = "rbtest_upgrade_\(UInt32.random(in: 0...UInt32.max))"
        try TestDatabase.connect(TestDatabase.url(of: "postgres")).execute("CREATE DATABASE \(name)")
        let url = TestDatabase.url(of: name)
        return (url, try TestDatabase.connect(url))
    }

    @Test func aDatabaseOfTheLastReleaseUpgradesInPlace() throws {
        let (_, connection) = try Self.empty()
        try Self.migrateAsReleased(connection)
        // A history written by that release's append: two sessions, markers, a delete.
        let (space, spaceBatch) = try SpaceCommands.create(
            FieldReader(["key": "hull", "name": "Hull"]), Self.context(0))
        try Self.appendAsReleased(spaceBatch, on: connection)
        var sessions: [WorkSession] = []
        for index in 0..<2 {
            let (session, batch) = try WorkSessionCommands.create(
                FieldReader([:]), space: space, Self.context(Int64(1 + index)))
            try Self.appendAsReleased(batch, on: connection)
            sessions.append(session)
        }
        var markers: [MarkerWithDetails] = []
        for index in 0..<6 {
            let body = FieldReader([
                "p1": [0, 0, 0], "p2": [2, 0, 0], "p3": [2, 0, .integer(Int64(index))], "p4": [0, 0, 4],
            ])
            let (marker, batch) = try MarkerCommands.create(
                body, session: sessions[index % 2].place, Self.context(Int64(10 + index)))
            try Self.appendAsReleased(batch, on: connection)
            markers.append(marker)
        }
        try Self.appendAsReleased(
            try MarkerCommands.delete(markers[0], session: sessions[0].place, expectedVersion: nil, Self.context(20)),
            on: connection
        )

        let outcome = try Migrator(directory: TestDatabase.schemaDirectory, logger: Logger(label: "test")).migrate(
            connection)
        #expect(
            outcome.migrations == [
                "0012_sync_protocol", "0013_tenancy", "0014_tenant_first_audit", "0015_token_revocations",
                "0016_verifiable_history", "0017_stream_routes",
            ])
        #expect(
            try connection.query("SELECT count(*) FROM eventlog.events WHERE tenant IS NULL").int64(0, 0) == 0,
            "every event names its space's tenant")
        #expect(
            try connection.query(
                """
                SELECT count(*) FROM eventlog.events e JOIN eventlog.tenant_logs l USING (tenant)
                WHERE e.tenant_seq BETWEEN 1 AND l.size
                """
            ).int64(0, 0) == connection.query("SELECT count(*) FROM eventlog.events").int64(0, 0),
            "every event is numbered in its tenant's log")
        #expect(outcome.functions.contains("append"))
        // The migrations that still have files get their checksums on first sight.
        #expect(
            try connection.query(
                """
                SELECT count(*) FROM schema_migrations WHERE checksum IS NOT NULL AND version IN \
                ('0001_event_log', '0002_projection_tables', '0007_hash_chain', '0008_audit_indexes')
                """
            ).int64(0, 0) == 4)

        // Every event got its topic numbers, every marker its space; the log still checks out.
        #expect(try connection.query("SELECT count(*) FROM eventlog.topic_sequence_breaks()").int64(0, 0) == 0)
        #expect(try connection.query("SELECT count(*) FROM eventlog.misrouted_events()").int64(0, 0) == 0)
        #expect(
            try connection.query(
                "SELECT count(*) FROM eventlog.events WHERE work_session_id IS NOT NULL AND work_session_seq IS NULL"
            ).int64(0, 0) == 0)
        #expect(
            try connection.query("SELECT count(*) FROM markers WHERE space_id = $1", [space.id.description]).int64(0, 0)
                == 5)
        #expect(
            try connection.query("SELECT position FROM eventlog.first_broken_link() WHERE position IS NOT NULL")
                .rowCount == 0)
        #expect(try ProjectionVerifier(connection: connection).verify().differences.isEmpty)
        // Spaces stored before tenancy belong to the default tenant, deleted ones included.
        #expect(try connection.query("SELECT count(*) FROM spaces WHERE tenant <> 'default'").int64(0, 0) == 0)
        #expect(
            try connection.query(
                "SELECT count(*) FROM space_tenants WHERE space_id = $1 AND tenant = 'default'",
                [space.id.description]
            ).int64(0, 0) == 1)

        // New appends continue each topic's numbers.
        let before = try connection.query(
            "SELECT max(work_session_seq) FROM eventlog.events WHERE work_session_id = $1", [sessions[1].id.description]
        ).int64(0, 0)!
        let (_, batch) = try MarkerCommands.create(
            FieldReader(["p1": [0, 0, 0], "p2": [1, 0, 0], "p3": [1, 0, 1], "p4": [0, 0, 1]]),
            session: sessions[1].place, Self.context(30))
        _ = try EventStore.append(batch, on: connection)
        let after = try connection.query(
            """
            SELECT array_agg(work_session_seq ORDER BY position)::text FROM eventlog.events WHERE work_session_id \
            = $1 AND work_session_seq > $2
            """,
            [sessions[1].id.description, String(before)]
        ).string(0, 0)
        #expect(after == "{\(before + 1),\(before + 2)}")
        #expect(try connection.query("SELECT count(*) FROM eventlog.topic_sequence_breaks()").int64(0, 0) == 0)
        #expect(
            try connection.query("SELECT count(*) FROM eventlog.events WHERE tenant IS DISTINCT FROM 'default'")
                .int64(0, 0) == 0, "the new append names the tenant too")

        // An event moved to another tenant's audit trail is found by `roboscope verify`.
        try connection.execute("ALTER TABLE eventlog.events DISABLE TRIGGER USER")
        try connection.execute(
            "UPDATE eventlog.events SET tenant = 'other' WHERE position = (SELECT max(position) FROM eventlog.events)"
        )
        try connection.execute("ALTER TABLE eventlog.events ENABLE TRIGGER USER")
        #expect(try connection.query("SELECT count(*) FROM eventlog.misrouted_events()").int64(0, 0) == 1)
        try connection.execute("ALTER TABLE eventlog.events DISABLE TRIGGER USER")
        try connection.execute("UPDATE eventlog.events SET tenant = 'default' WHERE tenant = 'other'")
        try connection.execute("ALTER TABLE eventlog.events ENABLE TRIGGER USER")

        // Running again changes nothing.
        let again = try Migrator(directory: TestDatabase.schemaDirectory, logger: Logger(label: "test")).migrate(
            connection)
        #expect(again.migrations.isEmpty && again.functions.isEmpty)
    }

    @Test func anEditedAppliedMigrationIsRefusedAndAChangedFunctionReapplied() throws {
        let (_, connection) = try Self.empty()
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("schema-\(UUID())")
        try FileManager.default.copyItem(at: TestDatabase.schemaDirectory, to: copy)
        defer { try? FileManager.default.removeItem(at: copy) }
        let migrator = Migrator(directory: copy, logger: Logger(label: "test"))
        try migrator.migrate(connection)

        let function = copy.appendingPathComponent("functions/parent_of.sql")
        try (try String(contentsOf: function, encoding: .utf8) + "\n-- reworded\n").write(
            to: function, atomically: true, encoding: .utf8)
        #expect(try migrator.migrate(connection).functions == ["parent_of"])

        let migration = copy.appendingPathComponent("migrations/0002_projection_tables.sql")
        try (try String(contentsOf: migration, encoding: .utf8) + "\n-- edited after release\n").write(
            to: migration, atomically: true, encoding: .utf8)
        #expect {
            try migrator.migrate(connection)
        } throws: { error in
            "\(error)".contains("0002_projection_tables") && "\(error)".contains("must not be edited")
        }
    }

    /// The append routes each event by its stream type's row of `eventlog.stream_routes`
    /// (a type without one would belong to no session, space or tenant): the rows are the
    /// vocabulary's stream types, no more and no fewer.
    @Test func everyStreamTypeHasARouteAndEveryRouteAStreamType() throws {
        let (_, connection) = try Self.empty()
        try Migrator(directory: TestDatabase.schemaDirectory, logger: Logger(label: "test")).migrate(connection)
        let rows = try connection.query("SELECT stream_type FROM eventlog.stream_routes")
        let routed = Set((0..<rows.rowCount).compactMap { rows.string($0, 0) })
        #expect(routed == Set(StreamType.allCases.map(\.rawValue)))
    }
}
