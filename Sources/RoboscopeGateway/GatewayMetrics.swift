import Foundation

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

    func opened() { lock.lock(); open += 1; openedTotal += 1; lock.unlock() }
    func closed() { lock.lock(); open -= 1; lock.unlock() }
    func delivered(_ connections: Int) { lock.lock(); writes += connections; lock.unlock() }
    func slowConsumer() { lock.lock(); slowConsumers += 1; lock.unlock() }

    public var snapshot: Snapshot {
        lock.lock(); defer { lock.unlock() }
        return Snapshot(openConnections: open, connectionsOpened: openedTotal, flushes: writes, slowConsumersClosed: slowConsumers)
    }
}
