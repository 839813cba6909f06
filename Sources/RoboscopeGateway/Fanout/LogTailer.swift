import BlockingPool
import Foundation
import Logging
import RoboscopeDomain
import RoboscopePostgres
import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// A client's subscription on its way to the tailer, with the principal it acts for.
struct SubscribeRequest: Sendable {
    /// Where the answer goes.
    let mailbox: ShardMailbox
    let connectionID: UInt64
    let grant: PendingGrant
    let since: Int64?
    let principal: Principal
    var topic: Topic { grant.topic }
}

/// What the tailer's thread does for the shards, on its Postgres connection.
enum TailerRequest: Sendable {
    case subscribe(SubscribeRequest)
    /// Where an entity lives (a `presence` op's session): answered to the shard's
    /// mailbox as its look-up `number`.
    case place(StreamRef, replyTo: ShardMailbox, number: UInt64)
}

/// Follows the log for this gateway: one thread, one Postgres connection that
/// LISTENs for appends and also polls, reading `eventlog.deliveries` in delivery
/// order. Every granted subscription and every live batch leaves this thread in
/// order, which is what makes the `since` seam exact: a subscription's catch-up ends
/// at the cursor the next live read starts from.
///
/// Sendable as it is: the cursor, the connection and the loop's state live inside the
/// thread's body (`Following`, locals of `run`; the thread is handed the shards it
/// delivers to when it starts), and other threads reach it only through `inbox`.
final class LogTailer: Sendable {
    private let databaseURL: String
    private let configuration: GatewayConfiguration
    private let registry: TopicRegistry
    private let logger: Logger
    private let metrics: GatewayMetrics
    private let inbox: Inbox<TailerRequest>
    /// The places of the topics and sessions clients name (rule 2 of docs/security.md).
    let places: Places
    private var waker: Waker { inbox.waker }
    private let thread = ThreadSlot()
    static let batchSize = 500

    init(
        databaseURL: String, configuration: GatewayConfiguration, registry: TopicRegistry, metrics: GatewayMetrics,
        logger: Logger
    ) throws {
        self.databaseURL = databaseURL
        self.metrics = metrics
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
        inbox = try Inbox()
        places = Places(pool: nil)
    }

    /// Starts the tailer's thread, delivering to `shards`.
    func start(delivering shards: [ShardMailbox]) {
        thread.start(name: "ws-log-tailer") { [self] in run(shards) }
    }

    func stop() async {
        inbox.close()
        await thread.join()
    }

    func request(_ request: SubscribeRequest) {
        inbox.post(.subscribe(request))
    }

    /// A place known already, without a query (nil: `lookUp` it).
    func cachedPlace(_ stream: StreamRef) -> Place? {
        places.cached(stream)
    }

    /// Looks up a place on the tailer's connection; the answer goes to `mailbox` as
    /// `ShardMessage.placed(lookUp: number, ...)`.
    func lookUp(_ stream: StreamRef, for mailbox: ShardMailbox, number: UInt64) {
        inbox.post(.place(stream, replyTo: mailbox, number: number))
    }

    /// The requests queued so far; notes a stop request for the loop.
    private func takeRequests(_ state: inout Following) -> [TailerRequest] {
        let (requests, closed) = inbox.take()
        if closed { state.stopped = true }
        return requests
    }

    // MARK: The loop

    /// The loop's state, owned by the tailer's thread.
    struct Following {
        /// Where live delivery stands.
        var live = LiveSequence(batchSize: LogTailer.batchSize)
        var nextLagCheck = ContinuousClock.now
        var stopped = false
        var cursor: LogCursor? { live.cursor }
    }

    private func run(_ shards: [ShardMailbox]) {
        var state = Following()
        var backoff = Backoff()
        while !state.stopped {
            guard let connection = connect(&state, &backoff) else { continue }
            follow(on: connection, &state, to: shards)
        }
    }

    /// A connection that LISTENs, with live delivery moved to its head; nil (after the
    /// backoff, the waiting requests refused) when Postgres cannot be reached.
    private func connect(_ state: inout Following, _ backoff: inout Backoff) -> PGConnection? {
        do {
            let connection = try PGConnection(databaseURL)
            try AppendNotifier.listen(on: connection)
            state.live.connected(head: try DeliveryReader.head(on: connection))
            backoff.succeeded()
            logger.info(
                "gateway following the log", metadata: ["position": "\(state.cursor.map { $0.position } ?? 0)"])
            return connection
        } catch {
            for request in takeRequests(&state) {
                switch request {
                case .subscribe(let request): refuse(request, .unavailableDatabase)
                case .place(_, let mailbox, let number): mailbox.post(.placed(lookUp: number, nil))
                }
            }
            logger.warning("gateway cannot reach Postgres; retrying", metadata: ["error": "\(error)"])
            waker.wait(timeoutMilliseconds: backoff.failed().milliseconds)
            return nil
        }
    }

    /// Serves requests and delivers live events on `connection` until it fails or the
    /// tailer stops.
    private func follow(on connection: PGConnection, _ state: inout Following, to shards: [ShardMailbox]) {
        while !state.stopped {
            do {
                for request in takeRequests(&state) { try serve(request, on: connection, until: state.cursor) }
                try readLive(on: connection, &state.live, to: shards)
                try measureLag(on: connection, &state)
                // A notification that came while the reads above ran is in libpq's queue
                // already, not on the socket: waiting on the socket would sleep through it
                // until the next poll. Only with none queued is there nothing new to read.
                if try connection.drainNotifications().isEmpty,
                    waker.wait(
                        timeoutMilliseconds: configuration.pollInterval.milliseconds, orReadable: connection.socket)
                {
                    _ = try connection.drainNotifications()
                }
            } catch {
                logger.warning("gateway lost Postgres; reconnecting", metadata: ["error": "\(error)"])
                return
            }
        }
    }

    private func readLive(
        on connection: PGConnection, _ live: inout LiveSequence, to shards: [ShardMailbox]
    ) throws {
        var step = live.next(anyoneSubscribed: !registry.isEmpty)
        while true {
            switch step {
            case .wait:
                return
            case .skipToHead:
                live.skipped(to: try DeliveryReader.head(on: connection))
                return
            case .read(let after):
                let batch = try DeliveryReader.live(after: after, limit: Self.batchSize, on: connection)
                publish(batch, to: shards)
                step = live.delivered(count: batch.count, last: batch.last?.cursor)
            }
        }
    }

    /// The log's newest position minus the delivered one (a gauge; 0 when caught up,
    /// more while a transaction older than the newest events is still running).
    /// Once a second at most: the loop wakes for every notification batch.
    private func measureLag(on connection: PGConnection, _ state: inout Following) throws {
        let now = ContinuousClock.now
        guard now >= state.nextLagCheck, let delivered = state.cursor?.position else { return }
        state.nextLagCheck = now + .seconds(1)
        let newest = try DeliveryReader.newestPosition(on: connection)
        metrics.lag(max(0, newest - delivered))
    }

    /// Renders each event once per topic that has subscribers here, and hands the
    /// frames to every shard.
    private func publish(_ batch: [Delivery], to shards: [ShardMailbox]) {
        var items: [LiveItem] = []
        for delivery in batch {
            for topic in delivery.topics where registry.contains(topic) {
                guard let frame = SharedFrame.event(delivery, on: topic, logger: logger) else { continue }
                items.append(
                    LiveItem(
                        topic: topic, position: delivery.cursor.position, frame: frame,
                        traceParent: delivery.change.traceParent))
            }
        }
        guard !items.isEmpty else { return }
        for shard in shards {
            shard.post(.deliver(items))
        }
    }

    // MARK: Subscriptions

    /// `cursor`: where live delivery stands, which a grant's catch-up ends at.
    private func serve(_ request: TailerRequest, on connection: PGConnection, until cursor: LogCursor?) throws {
        switch request {
        case .subscribe(let request):
            try grant(request, on: connection, until: cursor)
        case .place(let stream, let mailbox, let number):
            let place = try places.place(of: stream, on: connection)
            mailbox.post(.placed(lookUp: number, place))
        }
    }

    /// Decides a subscription with a few index probes, never reading its catch-up: that
    /// is paged by the catch-up reader as the client's socket drains, so live delivery
    /// does not wait for it.
    private func grant(_ request: SubscribeRequest, on connection: PGConnection, until cursor: LogCursor?) throws {
        // Withdrawn (unsubscribed, or its connection closed) while it waited: nobody
        // wants its answer, and it costs no read.
        guard !request.grant.isWithdrawn else { return refuse(request, .withdrawn) }
        guard let cursor else { return refuse(request, .unavailableDatabase) }
        do {
            // Rule 2: a topic the principal may not see is refused exactly as one that
            // does not exist; then the scope (subscribe reads).
            let place = try places.place(of: request.topic, on: connection)
            do {
                try request.principal.require(.read, in: place, otherwise: SubscriptionGrant.unknown(request.topic))
            } catch let refusal as DomainError {
                return refuse(request, refusal)
            }
            let head = try DeliveryReader.head(of: request.topic, until: cursor, on: connection)
            let grant = SubscriptionGrant(
                topic: request.topic, since: request.since, head: head ?? .empty,
                maxCatchUpEvents: configuration.maxCatchUpEvents)
            var step = grant.start()
            while true {
                switch step {
                case .askNewest:
                    step = grant.newest(try DeliveryReader.newestPosition(on: connection))
                case .askExists:
                    step = grant.exists(try DeliveryReader.exists(request.topic, on: connection))
                case .askSequence(let position):
                    step = grant.sequence(
                        atSince: try DeliveryReader.sequence(of: request.topic, atOrBefore: position, on: connection))
                case .refuse(let error):
                    return refuse(request, error)
                case .grant(let position, let topicSeq, let covered, let catchUp):
                    // Counted by the shard: granted if still wanted there, else withdrawn.
                    registry.insert(request.topic)
                    let outcome = SubscribeOutcome.granted(
                        position: position, topicSeq: topicSeq, covered: covered, catchUp: catchUp, until: cursor,
                        head: head)
                    request.mailbox.post(
                        .settle(connectionID: request.connectionID, grant: request.grant, outcome: outcome))
                    return
                }
            }
        } catch {
            refuse(request, .unavailableDatabase)
            throw error
        }
    }

    private func refuse(_ request: SubscribeRequest, _ error: DomainError) {
        metrics.answered(request.grant.isWithdrawn ? "withdrawn" : "refused")
        request.mailbox.post(
            .settle(connectionID: request.connectionID, grant: request.grant, outcome: .refused(error)))
    }
}

extension DomainError {
    static let unavailableDatabase = DomainError(.unavailable, "the event log is unreachable; retry shortly")
    /// The answer to a grant nobody waits for (it is discarded, never sent).
    static let withdrawn = DomainError(.notSubscribed, "withdrawn before it was served")
}
