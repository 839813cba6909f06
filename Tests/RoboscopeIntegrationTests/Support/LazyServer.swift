import Foundation

/// One server (on a fresh database) for a suite, started by the first test that asks;
/// every caller awaits the same start. `arguments` runs once, just before the start
/// (for flags that need files written first).
actor LazyServer {
    private let label: String
    private let arguments: @Sendable () throws -> [String]
    private var starting: Task<(server: ServerProcess, databaseURL: String), any Error>?

    init(_ label: String, arguments: @escaping @Sendable () throws -> [String] = { [] }) {
        self.label = label
        self.arguments = arguments
    }

    func get() async throws -> (server: ServerProcess, databaseURL: String) {
        if starting == nil {
            let label = label
            let arguments = arguments
            starting = Task {
                let url = try await TestDatabase.fresh(label)
                return (try await ServerProcess(databaseURL: url, extraArguments: try arguments()), url)
            }
        }
        return try await starting!.value
    }
}
