import BlockingPool
import Foundation
import Logging
import RoboscopeDomain

/// Keeps this process's revocations as Postgres has them (`publish` puts each list read in
/// force: the verifier's `RevocationList`): loads them, then `LISTEN`s on
/// `roboscope_revocations` (announced by a trigger on every change, from any instance) and
/// loads them again at each announcement, after each reconnect, and every `reloadInterval`
/// whatever happens (a notification lost in a failover costs at most that). On its own
/// connection and thread; a lost connection keeps the last list and reconnects with backoff.
public final class RevocationListener: Sendable {
    private let url: String
    private let publish: @Sendable ([Revocation]) -> Void
    private let logger: Logger
    private let thread: ReconnectingThread<PGConnection>

    public init(
        url: String, logger: Logger, reloadInterval: Duration = .seconds(30),
        publish: @escaping @Sendable ([Revocation]) -> Void
    ) {
        self.url = url
        self.publish = publish
        self.logger = logger
        thread = ReconnectingThread(name: "revocation-listener", logger: logger, lossLevel: .warning) {
            let connection = try PGConnection(url)
            try connection.execute("LISTEN \(RevocationStore.channel)")
            return connection
        } body: { connection, stop in
            var loadedAt = ContinuousClock.now
            publish(try RevocationStore.inForce(on: connection))
            while !stop.isStopped {
                let announced =
                    try connection.waitReadable(timeoutMilliseconds: 250)
                    && !(try connection.drainNotifications().isEmpty)
                if announced || ContinuousClock.now - loadedAt >= reloadInterval {
                    loadedAt = ContinuousClock.now
                    publish(try RevocationStore.inForce(on: connection))
                }
            }
        }
    }

    /// Loads the list once, before the process serves (a restart never serves a revoked
    /// token while its listener connects); false when Postgres could not be read.
    @discardableResult
    public func loadNow() -> Bool {
        do {
            let connection = try PGConnection(url)
            publish(try RevocationStore.inForce(on: connection))
            return true
        } catch {
            logger.warning(
                "revocations could not be read at start; retrying in the background",
                metadata: ["error": "\(error)"])
            return false
        }
    }

    public func start() { thread.start() }

    /// Stops the thread and waits for its end (at once if it never started).
    public func stop() async { await thread.stop() }
}
