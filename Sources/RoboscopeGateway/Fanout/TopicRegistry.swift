import Foundation
import RoboscopeDomain

/// How many subscriptions each topic has in this gateway, across shards. The tailer
/// renders an event only for topics someone here receives; the presence thread
/// watches only sessions someone here receives.
///
/// The tailer counts a subscription in when it grants it (on its own thread, before
/// the next live read), so no live event can slip past a subscription in flight.
final class TopicRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [Topic: Int] = [:]

    func increment(_ topic: Topic) {
        lock.lock(); defer { lock.unlock() }
        counts[topic, default: 0] += 1
    }

    func decrement(_ topic: Topic) {
        lock.lock(); defer { lock.unlock() }
        guard let count = counts[topic] else { return }
        counts[topic] = count > 1 ? count - 1 : nil
    }

    func contains(_ topic: Topic) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return counts[topic] != nil
    }

    var isEmpty: Bool {
        lock.lock(); defer { lock.unlock() }
        return counts.isEmpty
    }

    var workSessions: [EntityID] {
        lock.lock(); defer { lock.unlock() }
        return counts.keys.filter { $0.kind == .workSession }.map(\.id)
    }
}

/// Open connections per client address, to cap what one client can hold.
final class ClientCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    /// Counts a connection in; returns how many that client now has.
    func add(_ client: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        counts[client, default: 0] += 1
        return counts[client]!
    }

    func count(_ client: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        return counts[client] ?? 0
    }

    func remove(_ client: String) {
        lock.lock(); defer { lock.unlock() }
        guard let count = counts[client] else { return }
        counts[client] = count > 1 ? count - 1 : nil
    }
}
