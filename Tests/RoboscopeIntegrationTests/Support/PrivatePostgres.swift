import Foundation
import Logging
import RoboscopePostgres

/// A Postgres server of one test's own: `initdb` in a temporary folder, started on a free
/// port, for settings that belong to a whole server (`synchronous_standby_names`), which
/// the server every suite shares (deploy/local/services) must keep as they are. Postgres
/// refuses to run as root, so as root it runs as Debian's `postgres` account.
final class PrivatePostgres: @unchecked Sendable {
    let folder: URL
    let port: Int
    private let server = Process()

    /// Initialises, starts, creates the `roboscope` database and migrates it (off the
    /// cooperative pool: it takes a few seconds).
    static func start() async throws -> PrivatePostgres {
        let postgres = try await onOwnThread { try PrivatePostgres() }
        let url = postgres.url(of: "postgres")
        try await eventually("the private Postgres accepts connections", within: 60) {
            (try? PGConnection(url)) != nil
        }
        try await onOwnThread {
            try TestDatabase.connect(url).execute("CREATE DATABASE roboscope")
            try Migrator(directory: TestDatabase.schemaDirectory, logger: Logger(label: "test.migrate"))
                .migrate(try TestDatabase.connect(postgres.url(of: "roboscope")))
        }
        return postgres
    }

    func log() -> String {
        (try? String(contentsOf: folder.appendingPathComponent("server.log"), encoding: .utf8)) ?? ""
    }

    private init() throws {
        port = try FreePort.pick()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("roboscope-pg-\(port)")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if getuid() == 0 {
            let chown = Process()
            chown.executableURL = URL(fileURLWithPath: "/bin/chown")
            chown.arguments = ["postgres", folder.path]
            try Self.run(chown)
        }
        let data = folder.appendingPathComponent("data").path
        try asPostgres(
            "initdb", ["-D", data, "-U", "roboscope", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        let settings = """
            listen_addresses = '127.0.0.1'
            port = \(port)
            unix_socket_directories = '\(folder.path)'
            max_connections = 50
            """
        let configuration = try FileHandle(forWritingTo: URL(fileURLWithPath: data + "/postgresql.conf"))
        configuration.seekToEndOfFile()
        configuration.write(Data(("\n" + settings + "\n").utf8))
        try configuration.close()
        // In the foreground, a child of this process: `pg_ctl start` would leave a server
        // holding the descriptor by which Foundation learns that a child has ended.
        let log = folder.appendingPathComponent("server.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        server.standardInput = FileHandle.nullDevice
        server.standardOutput = try FileHandle(forWritingTo: log)
        server.standardError = server.standardOutput
        try Self.prepare(server, asPostgres: try Self.binaries().appendingPathComponent("postgres").path, ["-D", data])
        try server.run()
        ChildProcesses.register(server.processIdentifier)
    }

    func url(of database: String) -> String { "postgres://roboscope@127.0.0.1:\(port)/\(database)" }

    /// Sets one of the server's settings for every session, as `ALTER SYSTEM` and a
    /// reload do (nil: back to the default).
    func set(_ name: String, to value: String?) throws {
        let admin = try TestDatabase.connect(url(of: "postgres"))
        if let value {
            try admin.execute("ALTER SYSTEM SET \(name) = '\(value)'")
        } else {
            try admin.execute("ALTER SYSTEM RESET \(name)")
        }
        try admin.execute("SELECT pg_reload_conf()")
    }

    /// Stops the server at once (an immediate shutdown) and removes its folder.
    func stop() {
        if server.isRunning {
            try? asPostgres(
                "pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
            server.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: folder)
    }

    private func asPostgres(_ program: String, _ arguments: [String]) throws {
        let process = Process()
        try Self.prepare(process, asPostgres: try Self.binaries().appendingPathComponent(program).path, arguments)
        try Self.run(process)
    }

    /// As root, through `runuser`, which waits for the program and passes signals on.
    private static func prepare(_ process: Process, asPostgres binary: String, _ arguments: [String]) throws {
        if getuid() == 0 {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/runuser")
            process.arguments = ["-u", "postgres", "--", binary] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = arguments
        }
    }

    /// The newest of Debian's `/usr/lib/postgresql/<version>/bin`.
    private static func binaries() throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = try FileManager.default.contentsOfDirectory(atPath: root.path).compactMap(Int.init).sorted()
        guard let newest = versions.last else { throw TestFailure("no PostgreSQL under /usr/lib/postgresql") }
        return root.appendingPathComponent("\(newest)/bin")
    }

    /// Runs a program to its end, its output kept for the failure's message.
    private static func run(_ process: Process) throws {
        let output = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("\(process.arguments?.joined(separator: " ") ?? "") failed: \(text)")
        }
    }
}
