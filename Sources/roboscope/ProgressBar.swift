import BlockingPool
import Foundation
import RoboscopePostgres

/// A one-line progress bar on standard error: how much of the log is folded, and
/// how fast. Standard output keeps only the result, for scripts.
struct ProgressBar {
    let label: String
    private let started = ContinuousClock.now
    private var lastDrawn = ContinuousClock.now - .seconds(1)

    init(_ label: String) {
        self.label = label
    }

    mutating func update(_ progress: ReplayProgress) {
        let now = ContinuousClock.now
        guard now - lastDrawn >= .milliseconds(200) || progress.positionsDone >= progress.positionsTotal else { return }
        lastDrawn = now
        let width = 30
        let filled = Int(progress.fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        let seconds = (now - started).secondsDouble
        let rate = seconds > 0 ? Int(Double(progress.eventsFolded) / seconds) : 0
        let line = String(
            format: "\r%@ [%@] %3d%% %lld events, %d events/s", label, bar, Int(progress.fraction * 100),
            progress.eventsFolded, rate)
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() {
        FileHandle.standardError.write(Data("\n".utf8))
    }
}
