import Foundation

/// One server and database shared by the contract tests; each test makes its own
/// space, so tests do not see each other's data.
actor SharedServer {
    static let shared = SharedServer()
    private var starting: Task<(ServerProcess, String), any Error>?

    /// Every caller awaits the same start, however many ask at once.
    func get() async throws -> (server: ServerProcess, databaseURL: String) {
        if starting == nil {
            starting = Task {
                let databaseURL = try await TestDatabase.fresh("contract")
                // Tests hold sockets they read only at the end (a steady subscriber beside
                // one that drops and resumes); the client answers pings only while it
                // reads, and a loaded run stretched such a test past the default 30 s
                // ping and 30 s more of silence: the server closed it.
                return (
                    try await ServerProcess(databaseURL: databaseURL, extraArguments: ["--ws-ping-interval", "300"]),
                    databaseURL
                )
            }
        }
        return try await starting!.value
    }

    static func client() async throws -> HTTPClient {
        try await shared.get().server.client
    }

    /// The shared server's database, for looking at the log directly.
    static func database() async throws -> String {
        try await shared.get().databaseURL
    }
}
