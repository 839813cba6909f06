import RoboscopeDomain
import Synchronization

/// A multiset shared by the gateway's threads: how many of each element are in.
final class CountedSet<Element: Hashable & Sendable>: Sendable {
    private let counts = Mutex<[Element: Int]>([:])

    /// Counts one in; returns how many there now are.
    @discardableResult
    func insert(_ element: Element) -> Int {
        counts.withLock { counts in
            counts[element, default: 0] += 1
            return counts[element]!
        }
    }

    /// Counts one out (nothing if there was none).
    func remove(_ element: Element) {
        counts.withLock { counts in
            guard let count = counts[element] else { return }
            counts[element] = count > 1 ? count - 1 : nil
        }
    }

    func count(of element: Element) -> Int {
        counts.withLock { $0[element] ?? 0 }
    }

    func contains(_ element: Element) -> Bool {
        counts.withLock { $0[element] != nil }
    }

    var isEmpty: Bool {
        counts.withLock { $0.isEmpty }
    }

    var elements: [Element] {
        counts.withLock { Array($0.keys) }
    }
}

/// How many subscriptions each topic has in this gateway, across shards. The tailer
/// renders an event only for topics someone here receives; the presence thread
/// watches only sessions someone here receives.
///
/// The tailer counts a subscription in when it grants it (on its own thread, before
/// the next live read), so no live event can slip past a subscription in flight.
typealias TopicRegistry = CountedSet<Topic>

extension CountedSet where Element == Topic {
    var workSessions: [EntityID] {
        elements.filter { $0.kind == .workSession }.map(\.id)
    }
}

/// Open connections per client address, to cap what one client can hold.
typealias ClientCounter = CountedSet<String>
