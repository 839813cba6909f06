import Metrics
import Synchronization

/// Counters the gateway keeps about itself (logged at shutdown, read by benchmarks
/// and, later, exported as metrics).
public final class GatewayMetrics: Sendable {
    private let counts = Mutex(
        Snapshot(
            openConnections: 0, connectionsOpened: 0, flushes: 0, slowConsumersClosed: 0, withdrawnGrants: 0,
            catchUpsWaitingForSocket: 0))

    public struct Snapshot: Sendable, CustomStringConvertible {
        public var openConnections: Int
        public var connectionsOpened: Int
        public var flushes: Int
        public var slowConsumersClosed: Int
        public var withdrawnGrants: Int
        /// Connections whose next catch-up page waits for their socket to drain.
        public var catchUpsWaitingForSocket: Int

        public var description: String {
            """
            open=\(openConnections) opened=\(connectionsOpened) flushes=\(flushes) \
            slow_consumers=\(slowConsumersClosed) 
            """
                + "withdrawn_grants=\(withdrawnGrants) catch_ups_waiting_for_socket=\(catchUpsWaitingForSocket)"
        }
    }

    // Exported through swift-metrics (Prometheus at /metrics when this process serves HTTP).
    private let connectionsGauge = Gauge(label: "roboscope_ws_connections")
    private let messagesCounter = Counter(label: "roboscope_ws_messages_sent_total")
    private let slowCounter = Counter(label: "roboscope_ws_slow_consumers_total")
    private let lagGauge = Gauge(label: "roboscope_ws_lag_positions")
    /// Subscriptions answered, by outcome: `granted`, `refused`, or `withdrawn` (skipped
    /// by the tailer, or its grant dropped, because the client unsubscribed or left
    /// meanwhile).
    private let grantCounters = [
        "granted": Counter(label: "roboscope_ws_subscribe_answers_total", dimensions: [("outcome", "granted")]),
        "refused": Counter(label: "roboscope_ws_subscribe_answers_total", dimensions: [("outcome", "refused")]),
        "withdrawn": Counter(label: "roboscope_ws_subscribe_answers_total", dimensions: [("outcome", "withdrawn")]),
    ]
    /// Client ops refused by a limit (`rate_limited`), by op.
    private let limitedCounter = Counter(label: "roboscope_ws_rate_limited_total")
    /// permessage-deflate runs, by kind: `shared` (a broadcast, once for every subscriber
    /// with its window) and `catch_up` (a burst to one connection, as one stream); and the
    /// payload bytes that went in and came out.
    private let deflateCounters = [
        "shared": Counter(label: "roboscope_ws_deflate_runs_total", dimensions: [("kind", "shared")]),
        "catch_up": Counter(label: "roboscope_ws_deflate_runs_total", dimensions: [("kind", "catch_up")]),
    ]
    private let deflateInCounter = Counter(label: "roboscope_ws_deflate_bytes_in_total")
    /// Pages of subscriptions' catch-ups read (each asked when its socket drained), and
    /// their events.
    private let catchUpPagesCounter = Counter(label: "roboscope_ws_catch_up_pages_total")
    private let catchUpEventsCounter = Counter(label: "roboscope_ws_catch_up_events_total")
    /// Connections whose catch-up reads have stopped until their socket drains: a client
    /// that reads nothing costs no reads (and a test can wait for that, not for a time).
    private let catchUpsWaitingGauge = Gauge(label: "roboscope_ws_catch_ups_waiting_for_socket")
    private let deflateOutCounter = Counter(label: "roboscope_ws_deflate_bytes_out_total")

    /// Every series at zero from the start (a fresh gateway's dashboards show 0, not "no data").
    init() {
        connectionsGauge.record(0)
        messagesCounter.increment(by: 0)
        slowCounter.increment(by: 0)
        lagGauge.record(0)
        for counter in grantCounters.values { counter.increment(by: 0) }
        limitedCounter.increment(by: 0)
        for counter in deflateCounters.values { counter.increment(by: 0) }
        deflateInCounter.increment(by: 0)
        deflateOutCounter.increment(by: 0)
        catchUpPagesCounter.increment(by: 0)
        catchUpEventsCounter.increment(by: 0)
        catchUpsWaitingGauge.record(0)
    }

    /// A connection's catch-up started (+1) or stopped (-1) waiting for its socket.
    func catchUpWaitingForSocket(_ delta: Int) {
        let now = counts.withLock { counts in
            counts.catchUpsWaitingForSocket += delta
            return counts.catchUpsWaitingForSocket
        }
        catchUpsWaitingGauge.record(now)
    }

    func catchUpPage(events: Int) {
        catchUpPagesCounter.increment()
        catchUpEventsCounter.increment(by: events)
    }

    /// `runs` payloads of `kind` compressed from `bytesIn` to `bytesOut` bytes.
    func deflated(_ kind: String, runs: Int = 1, bytesIn: Int, bytesOut: Int) {
        deflateCounters[kind]?.increment(by: runs)
        deflateInCounter.increment(by: bytesIn)
        deflateOutCounter.increment(by: bytesOut)
    }

    func answered(_ outcome: String) {
        grantCounters[outcome]?.increment()
        if outcome == "withdrawn" { counts.withLock { $0.withdrawnGrants += 1 } }
    }

    func rateLimited() {
        limitedCounter.increment()
    }

    func opened() {
        let now = counts.withLock { counts in
            counts.openConnections += 1
            counts.connectionsOpened += 1
            return counts.openConnections
        }
        connectionsGauge.record(now)
    }

    func closed() {
        let now = counts.withLock { counts in
            counts.openConnections -= 1
            return counts.openConnections
        }
        connectionsGauge.record(now)
    }

    /// One fan-out batch: `messages` frames queued, `connections` connections written.
    func delivered(messages: Int, connections: Int) {
        counts.withLock { $0.flushes += connections }
        messagesCounter.increment(by: messages)
    }

    func slowConsumer() {
        counts.withLock { $0.slowConsumersClosed += 1 }
        slowCounter.increment()
    }

    /// How many positions the log's head is ahead of what this gateway delivered.
    func lag(_ positions: Int64) {
        lagGauge.record(positions)
    }

    public var snapshot: Snapshot {
        counts.withLock { $0 }
    }
}
