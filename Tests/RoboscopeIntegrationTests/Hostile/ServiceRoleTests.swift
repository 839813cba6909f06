import Foundation
import Logging
import RoboscopePostgres
import Testing

/// The service as a role that can append to the log but never edit it
/// (`migrate --service-role`, docs/security.md "Database roles"): a compromised or buggy
/// process cannot rewrite history, nor switch the append-only trigger off.
@Suite struct ServiceRoleTests {
    static let role = "rbtest_service"
    static let ownerRole = "rbtest_owner"

    /// A database owned by a role that is no superuser, migrated by it (as compose and
    /// the Kubernetes Job do), with the service role granted its privileges; its URL as
    /// each role.
    static let database: Task<(owner: String, service: String), any Error> = Task {
        try await onOwnThread {
            BrokenPipes.ignored
            let name = "rbtest_service_role_\(UInt32.random(in: 0...UInt32.max))"
            let admin = try TestDatabase.connect(TestDatabase.url(of: "postgres"))
            // Roles belong to the cluster: made once, kept for the next run.
            for role in [role, ownerRole] {
                try admin.execute(
                    """
                    DO $$ BEGIN
                        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '\(role)') THEN
                            CREATE ROLE \(role) LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
                        END IF;
                    END $$
                    """)
            }
            try admin.execute("CREATE DATABASE \(name) OWNER \(ownerRole)")
            let owner = url(TestDatabase.url(of: name), as: ownerRole)
            try Migrator(directory: TestDatabase.schemaDirectory, logger: Logger(label: "test"), serviceRole: role)
                .migrate(TestDatabase.connect(owner))
            return (owner, url(owner, as: role))
        }
    }

    /// Each statement run as the role at `url`: "ACCEPTED", or the error it met.
    static func outcomes(of statements: [String], as url: String) async throws -> [String: String] {
        try await onOwnThread { () throws -> [String: String] in
            let connection = try TestDatabase.connect(url)
            var outcomes: [String: String] = [:]
            for statement in statements {
                do {
                    try connection.execute(statement)
                    outcomes[statement] = "ACCEPTED"
                } catch {
                    outcomes[statement] = "\(error)"
                }
            }
            return outcomes
        }
    }

    static func url(_ url: String, as user: String) -> String {
        var components = URLComponents(string: url)!
        components.user = user
        return components.string!
    }

    @Test func theServiceRoleCannotEditTheLogNorDisableItsGuard() async throws {
        let (owner, service) = try await Self.database.value
        let server = try await ServerProcess(databaseURL: service, extraArguments: ["--no-migrate"])
        defer { server.stopWithoutWaiting() }
        let space = try await server.client.post("/api/v1/spaces", ["key": "hull-7", "name": "Hull 7"])
        #expect(space.status == 201, "the service works as its role: \(space.json)")
        let renamed = try await server.client.patch(
            "/api/v1/spaces/\(space.json["id"]?.string ?? "")", ["name": "Hull 7b"])
        #expect(renamed.status == 200)

        let refusals = try await Self.outcomes(
            of: [
                "UPDATE eventlog.events SET data = '{}'::jsonb",
                "DELETE FROM eventlog.events",
                "TRUNCATE eventlog.events",
                "ALTER TABLE eventlog.events DISABLE TRIGGER events_append_only",
                "DROP TRIGGER events_append_only ON eventlog.events",
                "ALTER TABLE eventlog.events DISABLE TRIGGER ALL",
                "INSERT INTO public.schema_migrations (version, checksum) VALUES ('9999_forged', 'x')",
                "CREATE TABLE public.intruder (id int)",
            ], as: service)
        for (statement, outcome) in refusals {
            #expect(
                outcome.contains("permission denied") || outcome.contains("must be owner"), "\(statement): \(outcome)")
        }
        // The two changes are in the log, untouched (the suite's other tests share it).
        let spaceID = space.json["id"]?.string
        let events = try await onOwnThread {
            try PGConnectionForTests.query(
                owner, "SELECT count(*) FROM eventlog.events WHERE stream_id = $1::uuid", [spaceID])
        }
        #expect(events == 2)
    }

    /// Everything the service writes, it writes as its role: every kind of change through
    /// `eventlog.append`, a keyed write's stored answer, and the purge of old ones.
    @Test func theServiceWritesEverythingItWritesAsItsRole() async throws {
        let (_, service) = try await Self.database.value
        let server = try await ServerProcess(databaseURL: service, extraArguments: ["--no-migrate"])
        defer { server.stopWithoutWaiting() }
        let client = server.client
        let fixtures = Fixtures(client: client)
        let (_, session) = try await fixtures.spaceAndSession()
        let marker = try await fixtures.marker(in: session, ["label": "weld"])
        let id = Fixtures.id(marker)
        #expect(try await client.patch("/api/v1/markers/\(id)", ["label": "weld 2"]).status == 200)
        let bulk = Fixtures.markerFields(in: session)
        let bulked = try await client.post("/api/v1/markers/bulk", ["markers": [.object(bulk), .object(bulk)]])
        #expect(bulked.status == 201, "\(bulked.json)")
        let lock = "/api/v1/locks/\(Fixtures.id(session))"
        let acquired = try await client.send("POST", lock, json: ["holder": "fitter-1"])
        #expect(acquired.status == 200 || acquired.status == 201, "\(acquired.json)")
        let keyed = ["Idempotency-Key": "service-role-\(UUID())"]
        let first = try await client.send(
            "POST", "/api/v1/spaces", json: ["key": "keyed", "name": "K"], headers: keyed)
        let again = try await client.send(
            "POST", "/api/v1/spaces", json: ["key": "keyed", "name": "K"], headers: keyed)
        #expect(first.status == 201 && again.status == 201 && again.json == first.json, "\(again.json)")
        #expect(try await client.delete("/api/v1/markers/\(id)").status == 204)
        #expect(try await client.delete("/api/v1/work-sessions/\(Fixtures.id(session))").status == 204)
        #expect(try await client.get("/api/v1/integrity").status == 200)
        let pool = PostgresPool(url: service, size: 1, logger: Logger(label: "test"))
        let purged = try await IdempotencyKeys(pool: pool).purge(olderThan: .seconds(0))
        await onOwnThread { pool.shutdownBlocking() }
        #expect(purged >= 1, "the service purges old answers as its role")
    }

    /// What the service role cannot write, though a compromised process tried: an event
    /// of its own making (hashed by the database's own function), a projection row, a
    /// space moved to another tenant, a stored answer edited.
    @Test func theServiceRoleCannotForgeAnEventNorMoveASpace() async throws {
        let (owner, service) = try await Self.database.value
        let server = try await ServerProcess(databaseURL: service, extraArguments: ["--no-migrate"])
        defer { server.stopWithoutWaiting() }
        let space = try await Fixtures(client: server.client).space()
        let spaceID = Fixtures.id(space)
        let refusals = try await Self.outcomes(
            of: [
                """
                INSERT INTO eventlog.events (stream_type, stream_id, stream_version, type, data, metadata)
                VALUES ('space', '\(spaceID)', 2, 'space.updated', '{}'::jsonb, '{"actor": "someone-else"}'::jsonb)
                """,
                "UPDATE public.space_tenants SET tenant = 'globex' WHERE space_id = '\(spaceID)'",
                "INSERT INTO public.space_tenants (space_id, tenant) VALUES (gen_random_uuid(), 'globex')",
                "UPDATE public.spaces SET name = 'forged' WHERE id = '\(spaceID)'",
                "DELETE FROM public.spaces",
                "UPDATE public.idempotency_keys SET status = 200",
            ], as: service)
        for (statement, outcome) in refusals {
            #expect(outcome.contains("permission denied"), "\(statement): \(outcome)")
        }
        let tenant = try await onOwnThread {
            try TestDatabase.connect(owner).query(
                "SELECT tenant FROM public.space_tenants WHERE space_id = $1::uuid", [spaceID]
            ).string(0, 0)
        }
        #expect(tenant == "default", "the space stays its tenant's")
    }

    @Test func aSuperuserOrAMissingRoleIsNotAServiceRole() async throws {
        let (owner, _) = try await Self.database.value
        let failures = try await onOwnThread { () throws -> [String] in
            let connection = try TestDatabase.connect(owner)
            let superuser =
                try TestDatabase.connect(TestDatabase.url(of: "postgres")).query("SELECT current_user").string(0, 0)
                ?? ""
            return ["rbtest_no_such_role", superuser, Self.ownerRole].map { role in
                do {
                    try Migrator(
                        directory: TestDatabase.schemaDirectory, logger: Logger(label: "test"), serviceRole: role
                    ).migrate(connection)
                    return "ACCEPTED"
                } catch {
                    return "\(error)"
                }
            }
        }
        #expect(failures[0].contains("does not exist"), "\(failures[0])")
        #expect(failures[1].contains("is a superuser"), "\(failures[1])")
        #expect(failures[2].contains("must not be the role that migrates"), "\(failures[2])")
    }
}
