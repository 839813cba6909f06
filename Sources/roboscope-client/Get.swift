import ArgumentParser
import Foundation
import RoboscopeKit

/// One read: the answer's JSON on standard output and exit 0 for a 2xx; else the error
/// body, exactly as the server wrote it, on standard error and exit 2.
enum Read {
    static func run(_ connection: Connection, path: String) async throws {
        defer { LoggedHTTPTransport.flush() }
        let client = connection.client()
        let response: HTTPResponseData
        do {
            response = try await client.sendAnswering(method: "GET", path: path, body: nil, key: nil)
        } catch let error as RoboscopeError {
            Diagnostics.line("\(error)")
            throw ExitCode(1)
        }
        if (200..<300).contains(response.status) {
            Output.line(String(decoding: response.body, as: UTF8.self))
            return
        }
        if response.status == 401 { Diagnostics.tokenRefused(status: response.status, body: response.body) }
        FileHandle.standardError.write(response.body + Data("\n".utf8))
        throw ExitCode(2)
    }

    /// `path` under `/api/v1`, query included: `/spaces?limit=5`, `spaces/<id>`.
    static func normalized(_ path: String) throws -> String {
        var path = path.hasPrefix("/") ? path : "/" + path
        if path.hasPrefix("/api/v1/") { path = String(path.dropFirst("/api/v1".count)) }
        guard !path.contains(" "), !path.hasPrefix("//"), URL(string: "http://host/api/v1" + path) != nil else {
            throw ValidationError(
                "the path must be a path under /api/v1 such as /spaces or /markers?work_session_id=<id>")
        }
        return path
    }
}

/// `roboscope-client get <path>`.
struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "One GET under /api/v1: the JSON on standard output (exit 0), or the error body on standard error (exit 2)."
    )

    @OptionGroup var connection: Connection

    @Argument(
        help: "The path under /api/v1, query included: /spaces, /work-sessions/<id>, /markers?work_session_id=<id>.")
    var path: String

    func validate() throws { _ = try Read.normalized(path) }

    func run() async throws {
        try await Read.run(connection, path: try Read.normalized(path))
    }
}

/// The work session a `presence` or `lock` read names.
struct WorkSessionArgument: ParsableArguments {
    @Argument(help: "The work session's id.")
    var id: String

    func validate() throws {
        guard UUID(uuidString: id) != nil else { throw ValidationError("the work session id must be a UUID") }
    }
}

/// `roboscope-client presence <work session id>`.
struct PresenceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "presence", abstract: "Who is present in a work session now.")

    @OptionGroup var connection: Connection
    @OptionGroup var workSession: WorkSessionArgument

    func run() async throws {
        try await Read.run(connection, path: "/presence/\(workSession.id.lowercased())")
    }
}

/// `roboscope-client lock <work session id>`.
struct LockCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lock", abstract: "Who holds a work session's lock, until when.")

    @OptionGroup var connection: Connection
    @OptionGroup var workSession: WorkSessionArgument

    func run() async throws {
        try await Read.run(connection, path: "/locks/\(workSession.id.lowercased())")
    }
}
