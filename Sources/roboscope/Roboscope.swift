import ArgumentParser

@main
struct Roboscope: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roboscope",
        abstract: "The Roboscope collaboration service and its maintenance tools.",
        subcommands: [
            Serve.self, Migrate.self, Replay.self, Rebuild.self, Verify.self, Keygen.self, PrintSettings.self,
            PrintScopes.self,
        ],
        defaultSubcommand: Serve.self
    )
}
