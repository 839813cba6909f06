import ArgumentParser
import RoboscopeDomain

/// `roboscope scopes`: docs/security.md's table of what every operation needs.
struct PrintScopes: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scopes", abstract: "Print the scope every REST operation and WebSocket op needs (Markdown).",
        shouldDisplay: false
    )

    func run() {
        print(OperationScopes.markdown())
    }
}
