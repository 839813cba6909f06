import ArgumentParser
import Foundation
import RoboscopePostgres

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

    func run() async throws {
        let logger = common.logger("roboscope.verify")
        let connection = try await common.connect(logger: logger)
        if chain {
            let events = try HashChain.eventCount(on: connection)
            if let broken = try HashChain.firstBrokenLink(on: connection) {
                print("checked the hash chain of \(events) events: \(broken)")
                throw ExitCode(1)
            }
            print("checked the hash chain of \(events) events: intact")
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
