import ArgumentParser
import Foundation
import RoboscopeKit

/// `roboscope-client`: the service from a shell, built on RoboscopeKit alone.
@main
struct RoboscopeClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roboscope-client",
        abstract: "Follow a topic, read, or apply mutations through a durable outbox (RoboscopeKit from a shell).",
        discussion: "Exit codes: 0 done; 1 a failure to run; 2 the server refused (a request answered 4xx or 5xx); "
            + "3 watch gave up after --max-auth-failures refused tokens in a row.",
        subcommands: [Watch.self, Apply.self, Get.self, PresenceCommand.self, LockCommand.self, VerifyCommand.self]
    )
}

/// Where the service is.
struct Connection: ParsableArguments {
    @Option(name: .customLong("url"), help: "The HTTP base, such as http://127.0.0.1:8080.")
    var url: String

    @Option(name: .customLong("user"), help: "X-User-Id to act as (services without authentication).")
    var user: String?

    @Option(name: .customLong("token"), help: "A bearer token (services with authentication; env ROBOSCOPE_TOKEN).")
    var token: String?

    @Option(
        name: .customLong("token-file"),
        help:
            """
            A file holding the bearer token, read again before each request and connection (a refreshed file is \
            used at once).
            """
    )
    var tokenFile: String?

    @Flag(
        name: .customLong("log-requests"), help: "One JSON line on standard error as each HTTP attempt starts and ends."
    )
    var logRequests = false

    @Flag(
        name: .customLong("verbose"),
        help: """
            A line on standard error for each HTTP attempt: its method, path and W3C traceparent (the trace \
            an operator finds the request by), then its status.
            """
    )
    var verbose = false

    func validate() throws {
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
            throw ValidationError("--url must be an http(s) URL such as http://127.0.0.1:8080")
        }
        if token != nil, tokenFile != nil { throw ValidationError("give --token or --token-file, not both") }
        if let tokenFile, !FileManager.default.isReadableFile(atPath: tokenFile) {
            throw ValidationError("--token-file \(tokenFile) cannot be read")
        }
    }

    func client(webSocketURL: URL? = nil) -> RoboscopeClient {
        // An empty variable is no token (not an empty bearer).
        let token = (token ?? ProcessInfo.processInfo.environment["ROBOSCOPE_TOKEN"]).flatMap { $0.isEmpty ? nil : $0 }
        let provider: (any TokenProvider)? =
            tokenFile.map { FileTokenProvider(path: $0) } ?? token.map { StaticTokenProvider($0) }
        var configuration = RoboscopeConfiguration(
            baseURL: URL(string: url)!, webSocketURL: webSocketURL, userID: user, tokenProvider: provider
        )
        configuration.appName = "roboscope-client"
        if logRequests || verbose {
            configuration.http = LoggedHTTPTransport(base: configuration.http, style: logRequests ? .json : .text)
        }
        // A call that fails for good names its trace (its attempts' lines do too).
        if verbose { configuration.onFailedCall = { Diagnostics.line("\($0)") } }
        return RoboscopeClient(configuration)
    }
}

/// `--token-file`: the token as the file holds it now (trimmed), read at each request and
/// connection, so that whatever refreshes the file is followed without a restart.
struct FileTokenProvider: TokenProvider {
    let path: String

    func token() async throws -> String {
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw RoboscopeError.unauthorized(message: "--token-file \(path) is empty") }
        return text
    }

    func invalidate() async {}
}

/// Lines on standard error: a refused token, a refusal's reason.
enum Diagnostics {
    static func line(_ text: String) {
        FileHandle.standardError.write(Data(("roboscope-client: " + text + "\n").utf8))
    }

    /// The line a refused token gets (401, close 4001 or 4003): the reason and the server's code.
    static func tokenRefused(status: Int, body: Data) {
        let error = (try? WireCoding.decoder().decode(JSONValue.self, from: body))?["error"]
        let code = error?["code"]?.stringValue ?? ErrorCode.unauthorized.rawValue
        line("the server refused the token (\(status) \(code)): \(error?["message"]?.stringValue ?? "no reason given")")
    }
}

/// Writes standard output line by line, flushed: another program reads it as it comes.
enum Output {
    static func line(_ text: String) {
        // One write(2) per line: lines of concurrent writers never interleave, and nothing
        // waits in a buffer when another program reads the output as it comes.
        let bytes = Array((text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if written <= 0 { return }
            offset += written
        }
    }

    static func json(_ value: JSONValue) {
        line(String(decoding: (try? WireCoding.encoder().encode(value)) ?? Data("null".utf8), as: UTF8.self))
    }
}

/// Runs `body` until it ends or SIGINT/SIGTERM arrives (which cancels it); returns
/// whether a signal stopped it.
func untilSignalled(_ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
    let work = Task { try await body() }
    let signals = [SIGINT, SIGTERM].map { number -> DispatchSourceSignal in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number)
        source.setEventHandler { work.cancel() }
        source.resume()
        return source
    }
    defer { signals.forEach { $0.cancel() } }
    do {
        try await work.value
        return work.isCancelled
    } catch {
        if work.isCancelled { return true }
        throw error
    }
}
