import Foundation
import Logging
import RoboscopePostgres

/// Fresh, migrated databases on the Postgres that `deploy/local/services` started
/// (the test command exports its `DATABASE_URL`), one per test suite that needs isolation.
enum TestDatabase {
    static var serverURL: String {
        ProcessInfo.processInfo.environment["DATABASE_URL"] ?? "postgres://roboscope@127.0.0.1:55432/roboscope"
    }

    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var schemaDirectory: URL { repositoryRoot.appendingPathComponent("schema") }

    /// The URL of `database` on the same server.
    static func url(of database: String) -> String {
        var components = URLComponents(string: serverURL)!
        components.path = "/" + database
        return components.string!
    }

    /// A connection for the test's own reads and set-up, with a patient connect.
    static func connect(_ url: String) throws -> PGConnection {
        try PGConnection(patient(url))
    }

    /// `url` with a connect that may wait up to 15 s (the service's default is 2 s):
    /// while dozens of suites create and migrate databases and start servers at once, a
    /// backend can take longer than 2 s to start on this shared disk, and that is the
    /// machine's load, not what a test checks. Servers under test get it too (one CI run
    /// had a shared server's first write answer 503 "unreachable" for it). A URL that
    /// names its own timeout keeps it.
    static func patient(_ url: String) -> String {
        guard !url.contains("connect_timeout") else { return url }
        return url + (url.contains("?") ? "&" : "?") + "connect_timeout=15"
    }

    /// Creates a new database named after `label`, applies every migration, returns its URL
    /// (off the cooperative pool: it takes a second or more while dozens of suites do it).
    static func fresh(_ label: String) async throws -> String {
        try await onOwnThread { try freshNow(label) }
    }

    private static func freshNow(_ label: String) throws -> String {
        BrokenPipes.ignored
        let name = "rbtest_\(label)_\(UInt32.random(in: 0...UInt32.max))".lowercased()
        let admin = try TestDatabase.connect(url(of: "postgres"))
        try admin.execute("CREATE DATABASE \(name)")
        let databaseURL = url(of: name)
        let connection = try TestDatabase.connect(databaseURL)
        try Migrator(directory: schemaDirectory, logger: Logger(label: "test.migrate")).migrate(connection)
        return databaseURL
    }
}

/// Tests write to servers and child processes they may already have killed or that
/// closed first. Such a write must fail that test (EPIPE), not end the whole test
/// process with SIGPIPE. Every test that starts anything makes a database first.
enum BrokenPipes {
    static let ignored: Void = { _ = signal(SIGPIPE, SIG_IGN) }()
}
