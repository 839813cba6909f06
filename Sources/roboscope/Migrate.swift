import ArgumentParser
import RoboscopePostgres

/// `roboscope migrate`: applies the pending migrations of `schema/migrations/` and the changed functions of
/// `schema/functions/`.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending migrations from schema/.")

    @OptionGroup var common: CommonOptions
    @Option(name: Settings.defaultTenant.name, help: Settings.defaultTenant.help) var defaultTenantFlag: String?
    @Option(name: Settings.serviceRole.name, help: Settings.serviceRole.help) var serviceRoleFlag: String?

    func run() async throws {
        let logger = common.logger("roboscope.migrate")
        let migrator = Migrator(
            directory: try common.schemaURL(), logger: logger,
            legacyTenant: try Settings.defaultTenant.value(defaultTenantFlag),
            serviceRole: try Settings.serviceRole.resolve(serviceRoleFlag))
        let outcome = try await common.migrate(migrator, timeout: .seconds(60), logger: logger)
        if outcome.migrations.isEmpty && outcome.functions.isEmpty {
            print("schema is up to date")
        } else {
            if !outcome.migrations.isEmpty { print("applied migrations \(outcome.migrations.joined(separator: ", "))") }
            if !outcome.functions.isEmpty { print("applied functions \(outcome.functions.joined(separator: ", "))") }
        }
    }
}
