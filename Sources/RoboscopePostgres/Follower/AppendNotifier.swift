import BlockingPool
import Foundation
import Logging

/// Sends `NOTIFY roboscope_events` after appends commit, from its own connection and
/// thread, coalescing: signals that arrive while one NOTIFY is in flight become one
/// more NOTIFY, not one each. A NOTIFY inside every append transaction would take
/// Postgres's global notify lock at each commit and serialise all writers.
///
/// Losing a notification delays delivery but loses nothing: gateways also poll.
///
/// `@unchecked Sendable`: `pending` and `stopped` are guarded by `condition`, `thread`
/// is set by `start` before the thread runs; the connection lives on the notifier's thread.
public final class AppendNotifier: @unchecked Sendable {
    public static let channel = "roboscope_events"

    /// Subscribes `connection` to the notifications (`drainNotifications` reads them).
    public static func listen(on connection: PGConnection) throws {
        try connection.execute("LISTEN \(channel)")
    }

    private let url: String
    private let logger: Logger
    private let condition = NSCondition()
    private var pending = false
    private var stopped = false
    private var thread: Thread?
    private let completion = ThreadCompletion()

    public init(url: String, logger: Logger) {
        self.url = url
        self.logger = logger
    }

    public func start() {
        let thread = Thread { [self] in
            run()
            completion.finish()
        }
        thread.name = "append-notifier"
        self.thread = thread
        thread.start()
    }

    /// This process's own long polls, woken at once rather than by the NOTIFY's echo.
    public var local: ChangeSignal?

    /// Cheap and non-blocking: marks a NOTIFY as due.
    public func signal() {
        local?.bump()
        condition.lock()
        if !pending {
            pending = true
            condition.signal()
        }
        condition.unlock()
    }

    public func shutdown() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    /// Stops the thread and waits for its end (at once if it never started).
    public func stop() async {
        shutdown()
        guard thread != nil else { return }
        await completion.wait()
    }

    private func run() {
        var connection: PGConnection?
        while true {
            condition.lock()
            while !pending && !stopped { condition.wait() }
            let stop = stopped
            pending = false
            condition.unlock()
            if stop { return }
            do {
                if connection == nil || connection!.isBroken {
                    let fresh = try PGConnection(url)
                    // A notification needs no durability: without this each NOTIFY's commit
                    // waits for its own WAL flush, one more fsync per append.
                    try fresh.execute("SET synchronous_commit = off")
                    connection = fresh
                }
                try connection!.execute("NOTIFY \(Self.channel)")
            } catch {
                logger.debug("notify failed; gateways will poll", metadata: ["error": "\(error)"])
                connection = nil
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
    }
}
