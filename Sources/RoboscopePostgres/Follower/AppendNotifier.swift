import BlockingPool
import Foundation
import Logging
import Synchronization

/// Sends `NOTIFY roboscope_events` after appends commit, from its own connection and
/// thread, coalescing: signals that arrive while one NOTIFY is in flight become one
/// more NOTIFY, not one each. A NOTIFY inside every append transaction would take
/// Postgres's global notify lock at each commit and serialise all writers.
///
/// Losing a notification delays delivery but loses nothing: gateways also poll.
public final class AppendNotifier: Sendable {
    public static let channel = "roboscope_events"

    /// Subscribes `connection` to the notifications (`drainNotifications` reads them).
    public static func listen(on connection: PGConnection) throws {
        try connection.execute("LISTEN \(channel)")
    }

    private let url: String
    private let logger: Logger
    /// This process's own long polls, woken at once rather than by the NOTIFY's echo.
    private let local: ChangeSignal?
    /// A NOTIFY is due; set by `signal`, cleared by the thread just before it sends one.
    private let pending = Atomic(false)
    private let stopped = Atomic(false)
    private let started = Atomic(false)
    private let wake = DispatchSemaphore(value: 0)
    private let completion = ThreadCompletion()

    public init(url: String, local: ChangeSignal? = nil, logger: Logger) {
        self.url = url
        self.local = local
        self.logger = logger
    }

    public func start() {
        let thread = Thread { [self] in
            run()
            completion.finish()
        }
        thread.name = "append-notifier"
        started.store(true, ordering: .sequentiallyConsistent)
        thread.start()
    }

    /// Cheap and non-blocking: marks a NOTIFY as due. Only the signal that finds none
    /// due wakes the thread, so signals during a NOTIFY make one more, not one each.
    public func signal() {
        local?.bump()
        if !pending.exchange(true, ordering: .sequentiallyConsistent) { wake.signal() }
    }

    public func shutdown() {
        stopped.store(true, ordering: .sequentiallyConsistent)
        wake.signal()
    }

    /// Stops the thread and waits for its end (at once if it never started).
    public func stop() async {
        shutdown()
        guard started.load(ordering: .sequentiallyConsistent) else { return }
        await completion.wait()
    }

    private func run() {
        var connection: PGConnection?
        while true {
            wake.wait()
            if stopped.load(ordering: .sequentiallyConsistent) { return }
            // Cleared before sending: a signal from now on wakes the thread again, and
            // one before is covered by the NOTIFY below.
            pending.store(false, ordering: .sequentiallyConsistent)
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
