import ArgumentParser
import Foundation
import RoboscopeKit

/// `roboscope-client verify`: proves the tenant's history was not rewritten, without
/// trusting the service's database (docs/investigations.md, "Proving the history").
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract:
            "Verify the tenant's signed history (its checkpoint, consistency with the last run; --events: each event).",
        discussion: "Exit 0 when everything holds; 1 when anything fails (the first tenant_seq that fails is named); "
            + "2 when the server refused."
    )

    @OptionGroup var connection: Connection

    @Option(help: "A folder where the pinned key and the last verified checkpoint are kept between runs.")
    var state: String

    @Option(
        help:
            "The verifier key to pin (<name>+<id>+<key>); else the kept one, else the service's, trusted on first use.")
    var key: String?

    @Flag(
        help:
            "Check every event up to the checkpoint: its digest, its stream's chain, its append's signature, the tree.")
    var events = false

    func run() async throws {
        defer { LoggedHTTPTransport.flush() }
        let folder = URL(fileURLWithPath: state)
        let file = folder.appendingPathComponent("checkpoint.json")
        let kept = try FileManager.default.contents(atPath: file.path).map {
            try JSONDecoder().decode(KeptCheckpoint.self, from: $0)
        }
        let report: HistoryReport
        do {
            report = try await connection.client().verifyHistory(pinnedKey: key, kept: kept, entries: events)
        } catch let error as RoboscopeError {
            Diagnostics.line("\(error)")
            throw ExitCode(2)
        }
        if let kept = report.kept {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try JSONEncoder().encode(kept).write(to: file, options: .atomic)
        }
        if let failure = report.failure {
            Output.line("FAILED: \(failure)")
            throw ExitCode(1)
        }
        guard let checkpoint = report.checkpoint else {
            Output.line("no checkpoint yet: the tenant's log is empty, or its first checkpoint is on its way")
            return
        }
        var line = "verified: \(checkpoint.origin), \(checkpoint.size) events"
        if events { line += ", each checked (\(report.entriesChecked))" }
        Output.line(line)
    }
}
