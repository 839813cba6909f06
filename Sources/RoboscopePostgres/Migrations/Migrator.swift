import Foundation
import Logging

/// Brings a database to the schema of `schema/`:
///
/// - `schema/migrations/NNNN_name.sql`, versioned: tables, indexes and backfills,
///   each applied once, in order, recorded in `public.schema_migrations` with the
///   SHA-256 of its text. An applied migration whose file has changed since is
///   refused: what the database went through can no longer be read from the tree.
/// - `schema/functions/name.sql`, repeatable: one canonical `CREATE OR REPLACE` of a
///   function or view (with the triggers that call it), applied again whenever its
///   text changes, as Flyway's repeatable migrations and sqitch's rework do, and after
///   any versioned migration (which may have dropped or changed what it relies on).
///   A first line `-- requires: a, b` names the files whose objects its signature uses.
///
/// Everything pending runs in one transaction under an advisory lock, so several
/// processes may start at once, and no appender ever sees new tables with old functions.
public struct Migrator {
    public let directory: URL
    let logger: Logger

    /// Who owns the data stored before tenancy existed: the migration that introduces
    /// tenants records it (`--default-tenant`; later runs leave it as it was).
    let legacyTenant: String

    /// The role the serving processes connect as (`--service-role`): granted what
    /// `schema/grants/service_role.sql` lists after every run; nil grants nothing (the
    /// migrating role then serves too, as in local development).
    let serviceRole: String?

    public init(directory: URL, logger: Logger, legacyTenant: String = "default", serviceRole: String? = nil) {
        self.directory = directory
        self.logger = logger
        self.legacyTenant = legacyTenant
        self.serviceRole = serviceRole
    }

    public struct Script: Sendable {
        public let name: String
        public let sql: String
        /// Names of the function files this one must follow.
        public let requires: [String]
    }

    public enum Failure: Error, CustomStringConvertible {
        case edited(migration: String, recorded: String, now: String)
        case unresolvable([String])

        public var description: String {
            switch self {
            case .edited(let migration, let recorded, let now):
                return "migration \(migration) was applied with checksum \(recorded.prefix(12)) but its file now has "
                    + "\(now.prefix(12)): applied migrations must not be edited; add a new one"
            case .unresolvable(let names):
                let listed = names.joined(separator: ", ")
                return "schema/functions: cannot order \(listed) (a missing or circular `-- requires:`)"
            }
        }
    }

    public func migrations() throws -> [Script] {
        try scripts(in: "migrations")
    }

    /// The function files, each after those it requires.
    public func functions() throws -> [Script] {
        var pending = try scripts(in: "functions")
        var ordered: [Script] = []
        var placed = Set<String>()
        while !pending.isEmpty {
            let ready = pending.filter { $0.requires.allSatisfy(placed.contains) }
            guard !ready.isEmpty else { throw Failure.unresolvable(pending.map(\.name)) }
            ordered += ready
            placed.formUnion(ready.map(\.name))
            pending.removeAll { placed.contains($0.name) }
        }
        return ordered
    }

    private func scripts(in folder: String) throws -> [Script] {
        let folderURL = directory.appendingPathComponent(folder)
        let names = try FileManager.default.contentsOfDirectory(atPath: folderURL.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
        return try names.map { name in
            let sql = try String(contentsOf: folderURL.appendingPathComponent(name), encoding: .utf8)
            var requires: [String] = []
            if let first = sql.split(separator: "\n", maxSplits: 1).first, first.hasPrefix("-- requires:") {
                requires = first.dropFirst("-- requires:".count).split(separator: ",")
                    .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            }
            return Script(name: String(name.dropLast(4)), sql: sql, requires: requires)
        }
    }

    /// What one run did.
    public struct Outcome: Sendable {
        public var migrations: [String] = []
        public var functions: [String] = []
    }

    /// Applies what is pending; returns the migrations and function files it applied.
    @discardableResult
    public func migrate(_ connection: PGConnection) throws -> Outcome {
        let migrations = try migrations()
        let functions = try functions()
        let outcome = try connection.transaction {
            try connection.query("SELECT pg_advisory_xact_lock(7293010001)")
            try connection.query("SELECT set_config('roboscope.legacy_tenant', $1, true)", [legacyTenant])
            try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS public.schema_migrations (
                    version text PRIMARY KEY,
                    applied_at timestamptz NOT NULL DEFAULT now()
                );
                ALTER TABLE public.schema_migrations ADD COLUMN IF NOT EXISTS checksum text;
                CREATE TABLE IF NOT EXISTS public.schema_functions (
                    name text PRIMARY KEY,
                    checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                );
                """)
            var outcome = Outcome()
            let recorded = try recordedChecksums("SELECT version, checksum FROM public.schema_migrations", connection)
            for migration in migrations {
                let checksum = try Self.checksum(migration.sql, connection)
                switch recorded[migration.name] {
                case .some(.some(let stored)) where stored != checksum:
                    throw Failure.edited(migration: migration.name, recorded: stored, now: checksum)
                case .some(.some):
                    continue
                case .some(.none):
                    // Recorded before checksums were: trusted as it reads now.
                    try connection.query(
                        "UPDATE public.schema_migrations SET checksum = $2 WHERE version = $1",
                        [migration.name, checksum]
                    )
                case .none:
                    try connection.execute(migration.sql)
                    try connection.query(
                        "INSERT INTO public.schema_migrations (version, checksum) VALUES ($1, $2)",
                        [migration.name, checksum]
                    )
                    outcome.migrations.append(migration.name)
                }
            }
            let applied = try recordedChecksums("SELECT name, checksum FROM public.schema_functions", connection)
            // Bodies refer to functions defined in later files; they are checked when they run.
            try connection.execute("SET LOCAL check_function_bodies = off")
            for function in functions {
                let checksum = try Self.checksum(function.sql, connection)
                let previous: String? = applied[function.name] ?? nil
                guard !outcome.migrations.isEmpty || previous != checksum else { continue }
                try connection.execute(function.sql)
                try connection.query(
                    """
                    INSERT INTO public.schema_functions (name, checksum) VALUES ($1, $2)
                    ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()
                    """,
                    [function.name, checksum]
                )
                outcome.functions.append(function.name)
            }
            if let serviceRole {
                try connection.query("SELECT set_config('roboscope.service_role', $1, true)", [serviceRole])
                try connection.execute(
                    try String(contentsOf: directory.appendingPathComponent("grants/service_role.sql"), encoding: .utf8)
                )
            }
            return outcome
        }
        for name in outcome.migrations { logger.info("applied migration", metadata: ["version": "\(name)"]) }
        for name in outcome.functions { logger.info("applied function", metadata: ["name": "\(name)"]) }
        if let serviceRole {
            logger.info("granted the service role its privileges", metadata: ["role": "\(serviceRole)"])
        }
        return outcome
    }

    private func recordedChecksums(_ sql: String, _ connection: PGConnection) throws -> [String: String?] {
        let result = try connection.query(sql)
        var checksums: [String: String?] = [:]
        for row in 0..<result.rowCount {
            guard let name = result.string(row, 0) else { continue }
            checksums[name] = .some(result.string(row, 1))
        }
        return checksums
    }

    /// SHA-256 of a script's text, hex (computed by Postgres: this module links no hash library).
    static func checksum(_ sql: String, _ connection: PGConnection) throws -> String {
        guard let hex = try connection.query("SELECT encode(sha256(convert_to($1, 'UTF8')), 'hex')", [sql]).string(0, 0)
        else {
            throw PGError(.statement, "sha256 returned nothing")
        }
        return hex
    }

    /// Finds `schema/`: `ROBOSCOPE_SCHEMA_DIR`, then `./schema`, then next to the
    /// executable (`.build/<config>/roboscope` → repository root, or `../share/roboscope/schema`).
    public static func locateSchema(explicit: String?) -> URL? {
        var candidates: [String] = []
        if let explicit { candidates.append(explicit) }
        if let fromEnvironment = ProcessInfo.processInfo.environment["ROBOSCOPE_SCHEMA_DIR"] {
            candidates.append(fromEnvironment)
        }
        candidates.append(FileManager.default.currentDirectoryPath + "/schema")
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        candidates.append(executable.appendingPathComponent("../../schema").standardized.path)
        candidates.append(executable.appendingPathComponent("../../../schema").standardized.path)
        candidates.append(executable.appendingPathComponent("../share/roboscope/schema").standardized.path)
        var isDirectory: ObjCBool = false
        for candidate in candidates
        where FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory) && isDirectory.boolValue {
            if candidate.hasSuffix("schema") || explicit != nil {
                return URL(fileURLWithPath: candidate)
            }
        }
        return nil
    }
}
