import BlockingPool
import Foundation
import Logging
import RoboscopeDomain
import Synchronization

/// Keeps this process's revocations as Postgres has them (`publish` puts each list read in
/// force: the verifier's `RevocationList`): loads them, then `LISTEN`s on
/// `roboscope_revocations` (announced by a trigger on every change, from any instance) and
/// loads it again at each announcement, after each reconnect, and every `reloadInterval`
/// whatever happens (a notification lost in a failover costs at most that). On its own
/// connection and thread; a lost connection keeps the last list and reconnects with backoff.
public final class RevocationListener: Sendable {
    private let url: String
    private let publish: @Sendable ([Revocation]) -> Void
    private let logger: Logger
    private let reloadInterval: Duration
    private let stopped = Atomic(false)
    private let started = Atomic(false)
    private let completion = ThreadCompletion()

    public init(url: String, logger: Logger, reloadInterval: Duration = .seconds(30),
                publish: @escaping @Sendable ([Revocation]) -> Void) {
        self.url = url
        self.publish = publish
        self.logger = logger
        self.reloadInterval = reloadInterval
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
            logger.warning("revocations could not be read at start; retrying in the background",
                           metadata: ["error": "\(error)"])
            return false
        }
    }

    public func start() {
        let thread = Thread { [self] in
            run()
            completion.finish()
        }
        thread.name = "revocation-listener"
        started.store(true, ordering: .sequentiallyConsistent)
        thread.start()
    }

    /// Stops the thread and waits for its end (at once if it never started).
    public func stop() async {
        stopped.store(true, ordering: .sequentiallyConsistent)
        guard started.load(ordering: .sequentiallyConsistent) else { return }
        await completion.wait()
    }

    private var isStopped: Bool { stopped.load(ordering: .sequentiallyConsistent) }

    private func run() {
        var backoff = Backoff()
        while !isStopped {
            do {
                let connection = try PGConnection(url)
                try connection.execute("LISTEN \(RevocationStore.channel)")
                backoff.succeeded()
                var loadedAt = ContinuousClock.now
                publish(try RevocationStore.inForce(on: connection))
                while !isStopped {
                    let announced = try connection.waitReadable(timeoutMilliseconds: 250)
                        && !(try connection.drainNotifications().isEmpty)
                    if announced || ContinuousClock.now - loadedAt >= reloadInterval {
                        loadedAt = ContinuousClock.now
                        publish(try RevocationStore.inForce(on: connection))
                    }
                }
            } catch {
                logger.warning("revocation listener lost Postgres; keeping the last list and reconnecting",
                               metadata: ["error": "\(error)"])
                let until = ContinuousClock.now + backoff.failed()
                while !isStopped, ContinuousClock.now < until { Thread.sleep(forTimeInterval: 0.1) }
            }
        }
    }
}
