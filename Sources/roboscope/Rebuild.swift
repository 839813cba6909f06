import BlockingPool
import ArgumentParser
import RoboscopePostgres

/// `roboscope rebuild`: refolds every projection from the event log alone.
struct Rebuild: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Rebuild the current-state tables from the event log.")

    @OptionGroup var common: CommonOptions

    func run() async throws {
        let logger = common.logger("roboscope.rebuild")
        let connection = try await common.connect(logger: logger)
        let started = ContinuousClock.now
        var bar = ProgressBar("rebuild")
        let events = try ProjectionRebuilder(connection: connection).rebuild { bar.update($0) }
        bar.finish()
        let seconds = (ContinuousClock.now - started).secondsDouble
        let rate = seconds > 0 ? Double(events) / seconds : 0
        print(
            "rebuilt projections from \(events) events in \(String(format: "%.2f", seconds)) s (\(Int(rate)) events/s)")
    }
}
