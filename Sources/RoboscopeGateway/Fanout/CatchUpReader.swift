import BlockingPool
import Logging
import RoboscopeDomain
import RoboscopePostgres

/// A page of a catch-up asked by a shard for one of its connections.
struct CatchUpPageRequest: Sendable {
    /// Where the page goes.
    let mailbox: ShardMailbox
    let connectionID: UInt64
    let ask: ConnectionCatchUps.PageAsk
}

/// What the reader answers: the page's frames, the position of its last event (nil:
/// empty), and where it was read; or that it cannot be read.
enum CatchUpPage: Sendable {
    case page(frames: [SharedFrame], last: Int64?, onStandby: Bool)
    /// The page failed `CatchUpReader.attempts` times on a connection that stayed up.
    case failed
}

/// Reads subscriptions' catch-ups, a page at a time, on a thread and a Postgres
/// connection of its own: the tailer, which serves live events, never waits for one
/// (issue 34). Shards ask for a page when their connection's socket has drained
/// (`ConnectionCatchUps`); pages are served first come, first served, so a catch-up
/// of thousands of events shares the reader with every other one page by page.
///
/// With `--read-database-url`, a catch-up is read on the standby once the standby's
/// prefix of the topic ends where the primary's did at the grant (`StandbyReads`); a
/// standby that fails mid catch-up hands the rest to the primary.
///
/// Sendable as it is: the connections and the loop's state live inside the thread's body
/// (`CatchUpConnections`, locals of `run`); other threads reach it only through `inbox`.
final class CatchUpReader: Sendable {
    private let databaseURL: String
    private let configuration: GatewayConfiguration
    private let metrics: GatewayMetrics
    private let logger: Logger
    private let inbox: Inbox<CatchUpPageRequest>
    private let thread = ThreadSlot()
    /// Tries of one page on a connection that stays up before it is answered `failed`.
    static let attempts = 3
    /// Most events of one page, whatever their size.
    static let pageEvents = 500

    init(databaseURL: String, configuration: GatewayConfiguration, metrics: GatewayMetrics, logger: Logger) throws {
        self.databaseURL = databaseURL
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        inbox = try Inbox()
    }

    func start() {
        thread.start(name: "ws-catch-up") { [self] in run() }
    }

    func stop() async {
        inbox.close()
        await thread.join()
    }

    func request(_ request: CatchUpPageRequest) {
        inbox.post(request)
    }

    // MARK: The loop

    private func run() {
        var connections = CatchUpConnections(
            primaryURL: databaseURL, standbyURL: configuration.readDatabaseURL, logger: logger)
        var waiting: [CatchUpPageRequest] = []
        var failures = 0
        var backoff = Backoff()
        while true {
            let (taken, closed) = inbox.take()
            if closed { return }
            waiting += taken
            // Withdrawn (unsubscribed, or the connection closed): nobody wants the page.
            waiting.removeAll { $0.ask.progress.grant.isWithdrawn }
            guard let request = waiting.first else {
                inbox.waker.wait(timeoutMilliseconds: 1000)
                continue
            }
            do {
                let page = try read(request.ask, &connections)
                waiting.removeFirst()
                failures = 0
                backoff.succeeded()
                answer(request, page)
            } catch {
                if connections.primaryIsLost {
                    // Postgres is away: the page waits for it, as everything queued does.
                    connections.dropPrimary()
                    logger.warning("catch-up reader lost Postgres; retrying", metadata: ["error": "\(error)"])
                    inbox.waker.wait(timeoutMilliseconds: backoff.failed().milliseconds)
                    continue
                }
                failures += 1
                logger.error(
                    "catch-up page failed", metadata: ["topic": "\(request.ask.progress.topic)", "error": "\(error)"])
                if failures >= Self.attempts {
                    waiting.removeFirst()
                    failures = 0
                    answer(request, .failed)
                }
            }
        }
    }

    private func answer(_ request: CatchUpPageRequest, _ page: CatchUpPage) {
        request.mailbox.post(
            .catchUpPage(page, connectionID: request.connectionID, grant: request.ask.progress.grant))
    }

    /// Up to `pageEvents` events of the topic after the ask's position, rendered, cut at
    /// `maxBytes` (one event at least): the next ask continues after the last one kept.
    private func read(_ ask: ConnectionCatchUps.PageAsk, _ held: inout CatchUpConnections) throws -> CatchUpPage {
        let progress = ask.progress
        let primary = try held.primary()
        var reader = primary
        var onStandby = false
        if configuration.readDatabaseURL != nil, progress.onStandby != false {
            reader = held.reader(for: progress, primary: primary)
            onStandby = reader !== primary
        }
        var rows: [Delivery]
        do {
            rows = try DeliveryReader.topic(
                progress.topic, after: progress.after, until: progress.until, limit: Self.pageEvents, on: reader)
        } catch  where reader !== primary {
            // The standby failed mid catch-up: the primary reads the same rows.
            held.dropStandby(error)
            onStandby = false
            rows = try DeliveryReader.topic(
                progress.topic, after: progress.after, until: progress.until, limit: Self.pageEvents, on: primary)
        }
        if rows.isEmpty, onStandby {
            // Short of the head the primary had (a standby reconnected to one further
            // behind): an empty page would end the catch-up early. The primary has them.
            onStandby = false
            rows = try DeliveryReader.topic(
                progress.topic, after: progress.after, until: progress.until, limit: Self.pageEvents, on: primary)
        }
        var frames: [SharedFrame] = []
        var bytes = 0
        var last: Int64?
        for row in rows {
            if !frames.isEmpty, bytes >= ask.maxBytes { break }
            last = row.cursor.position
            guard let frame = SharedFrame.event(row, on: progress.topic, logger: logger) else { continue }
            frames.append(frame)
            bytes += frame.count
        }
        metrics.catchUpPage(events: frames.count)
        return .page(frames: frames, last: last, onStandby: onStandby)
    }
}
