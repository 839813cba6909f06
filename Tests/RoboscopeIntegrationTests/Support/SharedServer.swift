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
                return (try await ServerProcess(databaseURL: databaseURL), databaseURL)
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
