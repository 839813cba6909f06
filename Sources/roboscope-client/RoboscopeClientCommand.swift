import ArgumentParser
import Foundation
import RoboscopeKit

/// `roboscope-client`: the service from a shell, built on RoboscopeKit alone.
@main
struct RoboscopeClientCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roboscope-client",
        abstract: "Follow a topic, or apply mutations through a durable outbox (RoboscopeKit from a shell).",
        subcommands: [Watch.self, Apply.self]
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

    @Flag(name: .customLong("log-requests"), help: "One JSON line on standard error as each HTTP attempt starts and ends.")
    var logRequests = false

    func validate() throws {
        guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
            throw ValidationError("--url must be an http(s) URL such as http://127.0.0.1:8080")
        }
    }

    func client(webSocketURL: URL? = nil) -> RoboscopeClient {
        // An empty variable is no token (not an empty bearer).
        let token = (token ?? ProcessInfo.processInfo.environment["ROBOSCOPE_TOKEN"]).flatMap { $0.isEmpty ? nil : $0 }
        var configuration = RoboscopeConfiguration(
            baseURL: URL(string: url)!, webSocketURL: webSocketURL, userID: user,
            tokenProvider: token.map { StaticTokenProvider($0) }
        )
        if logRequests { configuration.http = LoggedHTTPTransport(base: configuration.http) }
        return RoboscopeClient(configuration)
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
