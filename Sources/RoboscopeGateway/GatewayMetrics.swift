import Foundation
import Metrics

/// Counters the gateway keeps about itself (logged at shutdown, read by benchmarks
/// and, later, exported as metrics).
public final class GatewayMetrics: @unchecked Sendable {
    private let lock = NSLock()
    private var open = 0
    private var openedTotal = 0
    private var writes = 0
    private var slowConsumers = 0

    public struct Snapshot: Sendable, CustomStringConvertible {
        public var openConnections: Int
        public var connectionsOpened: Int
        public var flushes: Int
        public var slowConsumersClosed: Int

        public var description: String {
            "open=\(openConnections) opened=\(connectionsOpened) flushes=\(flushes) slow_consumers=\(slowConsumersClosed)"
        }
    }

    // Exported through swift-metrics (Prometheus at /metrics when this process serves HTTP).
    private let connectionsGauge = Gauge(label: "roboscope_ws_connections")
    private let messagesCounter = Counter(label: "roboscope_ws_messages_sent_total")
    private let slowCounter = Counter(label: "roboscope_ws_slow_consumers_total")
    private let lagGauge = Gauge(label: "roboscope_ws_lag_positions")

    /// Every series at zero from the start (a fresh gateway's dashboards show 0, not "no data").
    init() {
        connectionsGauge.record(0)
        messagesCounter.increment(by: 0)
        slowCounter.increment(by: 0)
        lagGauge.record(0)
    }

    func opened() {
        lock.lock(); open += 1; openedTotal += 1; let now = open; lock.unlock()
        connectionsGauge.record(now)
    }

    func closed() {
        lock.lock(); open -= 1; let now = open; lock.unlock()
        connectionsGauge.record(now)
    }

    /// One fan-out batch: `messages` frames queued, `connections` connections written.
    func delivered(messages: Int, connections: Int) {
        lock.lock(); writes += connections; lock.unlock()
        messagesCounter.increment(by: messages)
    }

    func slowConsumer() {
        lock.lock(); slowConsumers += 1; lock.unlock()
        slowCounter.increment()
    }

    /// How many positions the log's head is ahead of what this gateway delivered.
    func lag(_ positions: Int64) {
        lagGauge.record(positions)
    }

    public var snapshot: Snapshot {
        lock.lock(); defer { lock.unlock() }
        return Snapshot(openConnections: open, connectionsOpened: openedTotal, flushes: writes, slowConsumersClosed: slowConsumers)
    }
}
