import ArgumentParser
import Foundation
import Logging
import OTel
import RoboscopePostgres

/// Options every subcommand shares; flags override the environment, which overrides
/// defaults that match `deploy/local/services`.
struct CommonOptions: ParsableArguments {
    @Option(name: Settings.databaseURL.name, help: Settings.databaseURL.help) var databaseURLFlag: String?
    @Option(name: Settings.redisURL.name, help: Settings.redisURL.help) var redisURLFlag: String?
    @Option(name: Settings.schemaDirectory.name, help: Settings.schemaDirectory.help) var schemaDirectoryFlag: String?
    @Option(name: Settings.logLevel.name, help: Settings.logLevel.help) var logLevelFlag: String?
    @Option(name: Settings.logFormat.name, help: Settings.logFormat.help) var logFormatFlag: String?

    // Text settings always resolve (their parse accepts any text).
    var databaseURL: String { (try? Settings.databaseURL.value(databaseURLFlag)) ?? "" }
    var redisURL: String { (try? Settings.redisURL.value(redisURLFlag)) ?? "" }
    var schemaDirectory: String? { try? Settings.schemaDirectory.resolve(schemaDirectoryFlag) }

    func validate() throws {
        if let level = try Settings.logLevel.resolve(logLevelFlag), Logger.Level(rawValue: level) == nil {
            throw ValidationError("log level must be one of trace, debug, info, notice, warning, error, critical")
        }
        guard ["text", "json"].contains(logFormat) else { throw ValidationError("log format must be text or json") }
    }

    var logFormat: String { (try? Settings.logFormat.value(logFormatFlag)) ?? "text" }

    /// The logging system can be set up once per process; the first logger does it. Each
    /// line logged within a span names its trace and span (`trace_id`, `span_id`): none
    /// without tracing (docs/operations.md, "Tracing").
    private static let jsonLogging: Void = LoggingSystem.bootstrap(
        { JSONLogHandler(label: $0, metadataProvider: $1) }, metadataProvider: OTel.makeLoggingMetadataProvider())
    private static let textLogging: Void = LoggingSystem.bootstrap(
        StreamLogHandler.standardError, metadataProvider: OTel.makeLoggingMetadataProvider())

    func logger(_ label: String) -> Logger {
        if logFormat == "json" { _ = Self.jsonLogging } else { _ = Self.textLogging }
        let level =
            (try? Settings.logLevel.resolve(logLevelFlag)).flatMap { $0 }.flatMap { Logger.Level(rawValue: $0) }
            ?? .info
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

    /// Applies `migrator` on a writable primary, waiting for up to `timeout` while the
    /// server is starting, while the URL reaches a read-only server (SQLSTATE 25006: a
    /// standby, such as the former primary during a failover), and when the connection
    /// breaks mid-migration. A migration is one transaction, so a try that failed left
    /// nothing behind, and the next one starts on a new connection.
    func migrate(_ migrator: Migrator, timeout: Duration, logger: Logger) async throws -> Migrator.Outcome {
        let deadline = ContinuousClock.now + timeout
        while true {
            let connection = try await connect(
                timeout: max(.zero, ContinuousClock.now.duration(to: deadline)), logger: logger)
            do {
                return try migrator.migrate(connection)
            } catch let error as PGError
                where (error.sqlState == "25006" || error.kind == .connection) && ContinuousClock.now < deadline
            {
                logger.warning("waiting for a writable primary", metadata: ["error": "\(error.message)"])
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

    /// Whether the variable says `true` (any case).
    static func isTrue(_ name: String) -> Bool {
        string(name)?.lowercased() == "true"
    }

    static func int(_ name: String) throws -> Int? {
        guard let text = string(name) else { return nil }
        guard let value = Int(text) else { throw ValidationError("\(name) must be a whole number, got \(text)") }
        return value
    }

    static func double(_ name: String) throws -> Double? {
        guard let text = string(name) else { return nil }
        guard let value = Double(text), value.isFinite else {
            throw ValidationError("\(name) must be a number, got \(text)")
        }
        return value
    }
}
