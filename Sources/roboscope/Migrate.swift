import ArgumentParser
import RoboscopePostgres

/// `roboscope migrate`: applies the pending SQL files of `schema/`.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending migrations from schema/.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let logger = common.logger("roboscope.migrate")
        let connection = try await common.connect(logger: logger)
        let applied = try Migrator(directory: try common.schemaURL(), logger: logger).migrate(connection)
        print(applied.isEmpty ? "schema is up to date" : "applied \(applied.joined(separator: ", "))")
    }
}
