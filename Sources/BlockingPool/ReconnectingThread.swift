import Foundation
import Logging
import Synchronization

/// A named thread that holds one resource of a blocking library (a `LISTEN`ing Postgres
/// connection), runs `body` over it until stopped, and when either fails, lets the
/// resource go, waits as `Backoff` says and makes a new one: the one way this package's
/// listeners start, retry, stop and join (issue 47, "BackgroundLoop"). The resource lives
/// inside the thread's body, never in a stored optional: nothing to force-unwrap.
public final class ReconnectingThread<Resource>: Sendable {
    private let name: String
    private let logger: Logger
    /// How loud a lost resource is logged.
    private let lossLevel: Logger.Level
    private let stopped = StopFlag()
    private let started = Atomic(false)
    private let completion = ThreadCompletion()
    private let connect: @Sendable () throws -> Resource
    private let body: @Sendable (Resource, StopFlag) throws -> Void

    /// `connect` makes the resource; `body` uses it until the flag says stop (return) or
    /// it fails (throw: a new resource after the backoff).
    public init(
        name: String, logger: Logger, lossLevel: Logger.Level = .debug,
        connect: @escaping @Sendable () throws -> Resource,
        body: @escaping @Sendable (Resource, StopFlag) throws -> Void
    ) {
        self.name = name
        self.logger = logger
        self.lossLevel = lossLevel
        self.connect = connect
        self.body = body
    }

    /// Starts the thread (once).
    public func start() {
        guard !started.exchange(true, ordering: .sequentiallyConsistent) else { return }
        let thread = Thread { [self] in
            run()
            completion.finish()
        }
        thread.name = name
        thread.start()
    }

    /// Asks the thread to stop, without waiting.
    public func shutdown() {
        stopped.stop()
    }

    /// Stops the thread and waits for its end (at once if it never started).
    public func stop() async {
        shutdown()
        guard started.load(ordering: .sequentiallyConsistent) else { return }
        await completion.wait()
    }

    private func run() {
        var backoff = Backoff()
        while !stopped.isStopped {
            do {
                let resource = try connect()
                backoff.succeeded()
                try body(resource, stopped)
            } catch {
                logger.log(
                    level: lossLevel, "\(name) lost its connection; reconnecting", metadata: ["error": "\(error)"])
                stopped.wait(backoff.failed())
            }
        }
    }
}

/// Set once, read by a thread that loops until it is.
public final class StopFlag: Sendable {
    private let value = Atomic(false)

    public init() {}

    public var isStopped: Bool { value.load(ordering: .sequentiallyConsistent) }

    public func stop() { value.store(true, ordering: .sequentiallyConsistent) }

    /// Sleeps for `duration` or until stopped, looking every 100 ms, so that `stop` is
    /// not held up by a long wait.
    public func wait(_ duration: Duration) {
        let until = ContinuousClock.now + duration
        while !isStopped, ContinuousClock.now < until {
            Thread.sleep(forTimeInterval: min(0.1, max(0.001, (until - ContinuousClock.now).secondsDouble)))
        }
    }
}
