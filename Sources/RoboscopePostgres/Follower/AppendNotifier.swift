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

    /// This process's own long polls, woken at once rather than by the NOTIFY's echo.
    private let local: ChangeSignal?
    /// A NOTIFY is due; set by `signal`, cleared by the thread just before it sends one.
    private let pending = SharedAtomic(false)
    private let wake = DispatchSemaphore(value: 0)
    private let thread: ReconnectingThread<PGConnection>

    public init(url: String, local: ChangeSignal? = nil, logger: Logger) {
        self.local = local
        let pending = pending
        let wake = wake
        thread = ReconnectingThread(
            name: "append-notifier", logger: logger,
            connect: {
                let connection = try PGConnection(url)
                // A notification needs no durability: without this each NOTIFY's commit
                // waits for its own WAL flush, one more fsync per append.
                try connection.execute("SET synchronous_commit = off")
                return connection
            },
            body: { connection, stopped in
                while true {
                    wake.wait()
                    if stopped.isStopped { return }
                    // Cleared before sending: a signal from now on wakes the thread again,
                    // and one before is covered by the NOTIFY below. One that fails is
                    // sent again on the next connection (gateways poll meanwhile).
                    pending.value.store(false, ordering: .sequentiallyConsistent)
                    do {
                        try connection.execute("NOTIFY \(Self.channel)")
                    } catch {
                        if !pending.value.exchange(true, ordering: .sequentiallyConsistent) { wake.signal() }
                        throw error
                    }
                }
            }
        )
    }

    public func start() {
        thread.start()
    }

    /// Cheap and non-blocking: marks a NOTIFY as due. Only the signal that finds none
    /// due wakes the thread, so signals during a NOTIFY make one more, not one each.
    public func signal() {
        local?.bump()
        if !pending.value.exchange(true, ordering: .sequentiallyConsistent) { wake.signal() }
    }

    public func shutdown() {
        thread.shutdown()
        wake.signal()
    }

    /// Stops the thread and waits for its end (at once if it never started).
    public func stop() async {
        shutdown()
        await thread.stop()
    }
}
