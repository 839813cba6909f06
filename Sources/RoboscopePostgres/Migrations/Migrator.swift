import Foundation
import Logging

/// Applies the numbered SQL files of `schema/` that the database has not seen yet,
/// each in its own transaction, recorded in `public.schema_migrations`.
/// An advisory lock lets several processes start at once without applying twice.
public struct Migrator {
    public let directory: URL
    let logger: Logger

    public init(directory: URL, logger: Logger) {
        self.directory = directory
        self.logger = logger
    }

    public struct Migration {
        public let version: String
        public let sql: String
    }

    public func migrations() throws -> [Migration] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".sql") }
            .sorted()
        return try names.map { name in
            Migration(
                version: String(name.dropLast(4)),
                sql: try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            )
        }
    }

    /// Returns the versions it applied.
    @discardableResult
    public func migrate(_ connection: PGConnection) throws -> [String] {
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS public.schema_migrations (
                version text PRIMARY KEY,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        var applied: [String] = []
        for migration in try migrations() {
            let done = try connection.transaction {
                try connection.query("SELECT pg_advisory_xact_lock(7293010001)")
                let seen = try connection.query("SELECT 1 FROM public.schema_migrations WHERE version = $1", [migration.version])
                if seen.rowCount > 0 { return false }
                try connection.execute(migration.sql)
                try connection.query("INSERT INTO public.schema_migrations (version) VALUES ($1)", [migration.version])
                return true
            }
            if done {
                logger.info("applied migration", metadata: ["version": "\(migration.version)"])
                applied.append(migration.version)
            }
        }
        return applied
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
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        candidates.append(executable.appendingPathComponent("../../schema").standardized.path)
        candidates.append(executable.appendingPathComponent("../../../schema").standardized.path)
        candidates.append(executable.appendingPathComponent("../share/roboscope/schema").standardized.path)
        var isDirectory: ObjCBool = false
        for candidate in candidates where FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory) && isDirectory.boolValue {
            if candidate.hasSuffix("schema") || explicit != nil {
                return URL(fileURLWithPath: candidate)
            }
        }
        return nil
    }
}
