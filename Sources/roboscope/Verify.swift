import ArgumentParser
import Foundation
import RoboscopePostgres
import RoboscopeProofs

/// `roboscope verify`: replays the log into scratch tables and compares them with the
/// live projections; prints every difference and exits 1 if there is any.
/// `--chain` instead recomputes the log's hash chain and names the first broken link.
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare the projections with a replay of the event log, or (--chain) check the log's hash chain."
    )

    @OptionGroup var common: CommonOptions

    @Flag(name: .customLong("chain"), help: "Recompute every event's hash and name the first broken link.")
    var chain = false

    @Option(
        name: .customLong("verifier-key"),
        help: "With --chain, also check the service's signatures against this verifier key (<name>+<id>+<key>).")
    var verifierKey: String?

    func run() async throws {
        let logger = common.logger("roboscope.verify")
        let connection = try await common.connect(logger: logger)
        if chain {
            let events = try HashChain.eventCount(on: connection)
            let broken = try HashChain.firstBrokenLink(on: connection)
            print("checked the hash chain of \(events) events: \(broken.map { "\($0)" } ?? "intact")")
            var signed = true
            if let verifierKey {
                let report = try SignatureCheck.check(
                    .wholeLog, verifier: try NoteVerifier(verifierKey), on: connection)
                signed = report.invalidEvents == 0
                print(
                    "checked \(report.appends) appends' signatures: "
                        + (report.first.map { "\(report.invalidEvents) events without a valid one, first at \($0)" }
                            ?? "every event signed"))
            }
            if broken != nil || !signed { throw ExitCode(1) }
            return
        }
        var bar = ProgressBar("verify")
        let report = try ProjectionVerifier(connection: connection).verify { bar.update($0) }
        bar.finish()
        let counts = report.rowsCompared.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
            separator: ", ")
        print("replayed \(report.eventsReplayed) events; live rows: \(counts)")
        for difference in report.differences {
            print(difference)
        }
        if report.differences.isEmpty {
            print("projections match the log")
        } else {
            print("\(report.differences.count) difference(s)")
            throw ExitCode(1)
        }
    }
}
