import ArgumentParser
import Foundation
import Logging
import RoboscopePostgres

/// Options every subcommand shares; flags override the environment, which overrides
/// defaults that match `deploy/local/services`.
struct CommonOptions: ParsableArguments {
    @Option(name: .customLong("database-url"), help: "PostgreSQL URL (env DATABASE_URL).")
    var databaseURLFlag: String?

    @Option(name: .customLong("redis-url"), help: "Redis URL (env REDIS_URL).")
    var redisURLFlag: String?

    @Option(name: .customLong("schema-dir"), help: "Folder of SQL migrations (env ROBOSCOPE_SCHEMA_DIR).")
    var schemaDirectory: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error (env ROBOSCOPE_LOG_LEVEL).")
    var logLevelFlag: String?

    @Option(name: .customLong("log-format"), help: "text or json, one object per line (env ROBOSCOPE_LOG_FORMAT, default text).")
    var logFormatFlag: String?

    static let defaultDatabaseURL = "postgres://roboscope@127.0.0.1:55432/roboscope"
    static let defaultRedisURL = "redis://127.0.0.1:56379/0"

    var databaseURL: String { databaseURLFlag ?? Environment.string("DATABASE_URL") ?? Self.defaultDatabaseURL }
    var redisURL: String { redisURLFlag ?? Environment.string("REDIS_URL") ?? Self.defaultRedisURL }

    func validate() throws {
        if let level = logLevelFlag ?? Environment.string("ROBOSCOPE_LOG_LEVEL"), Logger.Level(rawValue: level) == nil {
            throw ValidationError("log level must be one of trace, debug, info, notice, warning, error, critical")
        }
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("log format must be text or json") }
    }

    var logFormat: String { logFormatFlag ?? Environment.string("ROBOSCOPE_LOG_FORMAT") ?? "text" }

    /// The logging system can be set up once per process; the first JSON logger does it.
    private static let jsonLogging: Void = LoggingSystem.bootstrap { JSONLogHandler(label: $0) }

    func logger(_ label: String) -> Logger {
        if logFormat == "json" { _ = Self.jsonLogging }
        let level = (logLevelFlag ?? Environment.string("ROBOSCOPE_LOG_LEVEL")).flatMap { Logger.Level(rawValue: $0) } ?? .info
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }

    func schemaURL() throws -> URL {
        guard let url = Migrator.locateSchema(explicit: schemaDirectory) else {
            throw ValidationError("cannot find the schema/ folder of migrations; pass --schema-dir")
        }
        return url
    }

    /// Connects, retrying while the server is starting, for up to `timeout`.
    func connect(timeout: Duration = .seconds(30), logger: Logger) async throws -> PGConnection {
        let deadline = ContinuousClock.now + timeout
        while true {
            do {
                return try PGConnection(databaseURL)
            } catch let error as PGError where ContinuousClock.now < deadline {
                logger.warning("waiting for postgres", metadata: ["error": "\(error.message)"])
                try await Task.sleep(for: .seconds(1))
            }
        }
    }
}

enum Environment {
    static func string(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    static func int(_ name: String) throws -> Int? {
        guard let text = string(name) else { return nil }
        guard let value = Int(text) else { throw ValidationError("\(name) must be a whole number, got \(text)") }
        return value
    }

    static func double(_ name: String) throws -> Double? {
        guard let text = string(name) else { return nil }
        guard let value = Double(text), value.isFinite else { throw ValidationError("\(name) must be a number, got \(text)") }
        return value
    }
}
