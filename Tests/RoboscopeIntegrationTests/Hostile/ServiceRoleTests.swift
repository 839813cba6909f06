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

        let refusals = try await onOwnThread { () throws -> [String: String] in
            let connection = try TestDatabase.connect(service)
            var refusals: [String: String] = [:]
            for statement in [
                "UPDATE eventlog.events SET data = '{}'::jsonb",
                "DELETE FROM eventlog.events",
                "TRUNCATE eventlog.events",
                "ALTER TABLE eventlog.events DISABLE TRIGGER events_append_only",
                "DROP TRIGGER events_append_only ON eventlog.events",
                "ALTER TABLE eventlog.events DISABLE TRIGGER ALL",
                "INSERT INTO public.schema_migrations (version, checksum) VALUES ('9999_forged', 'x')",
                "CREATE TABLE public.intruder (id int)",
            ] {
                do {
                    try connection.execute(statement)
                    refusals[statement] = "ACCEPTED"
                } catch {
                    refusals[statement] = "\(error)"
                }
            }
            return refusals
        }
        for (statement, outcome) in refusals {
            #expect(
                outcome.contains("permission denied") || outcome.contains("must be owner"), "\(statement): \(outcome)")
        }
        // The two changes are in the log, untouched.
        let events = try await onOwnThread {
            try PGConnectionForTests.query(owner, "SELECT count(*) FROM eventlog.events", [])
        }
        #expect(events == 2)
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
