import Foundation

/// Runs the real `roboscope` binary (or a script of the repository) with arguments
/// and captures its output.
enum CommandRunner {
    struct Outcome: Sendable {
        let status: Int32
        let output: String
    }

    /// `environment`: variables set (over this process's) for the command.
    static func roboscope(_ arguments: [String], environment: [String: String] = [:]) async throws -> Outcome {
        try await run(ServerProcess.binary, arguments, environment: environment)
    }

    /// `path` relative to the repository root, such as `deploy/backup/dump-events`.
    static func script(_ path: String, _ arguments: [String]) async throws -> Outcome {
        try await run(TestDatabase.repositoryRoot.appendingPathComponent(path), arguments)
    }

    /// Off the cooperative pool: a command runs for seconds (onOwnThread).
    static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:]
    ) async throws
        -> Outcome
    {
        try await onOwnThread { try runNow(executable, arguments, environment: environment) }
    }

    private static func runNow(
        _ executable: URL, _ arguments: [String], environment: [String: String]
    ) throws
        -> Outcome
    {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }
}
