import RoboscopeDomain

/// Who gets what of a live item: per topic, a shard's subscribers, each with what it
/// has already (its `since`), how it wants presence, and whether its catch-up is still
/// going out (its live frames are then held, not sent).
///
/// Pure and generic over the subscriber (the shard's `Connection`; tests use plain
/// objects): the shard routes each item through it and carries out the answers.
struct FanoutTable<Subscriber: AnyObject> {
    struct Entry {
        let subscriber: Subscriber
        /// Live events of the topic up to this position are already its own (its `since`).
        let covered: Int64?
        /// `"presence": "changes"`: joins and leaves, not the whole list.
        let presenceChanges: Bool
        /// Its catch-up is being paged: live frames are held until it is sent.
        var catchingUp: Bool
    }

    /// What one subscriber gets of an item.
    enum Delivery {
        /// Queue this frame for its socket.
        case send(SharedFrame)
        /// Keep this frame until its catch-up has gone out.
        case hold(SharedFrame)
    }

    private var topics: [Topic: [UInt64: Entry]] = [:]

    func contains(_ id: UInt64, on topic: Topic) -> Bool { topics[topic]?[id] != nil }

    mutating func add(
        _ id: UInt64, _ subscriber: Subscriber, to topic: Topic, covered: Int64?, presenceChanges: Bool,
        catchingUp: Bool
    ) {
        topics[topic, default: [:]][id] = Entry(
            subscriber: subscriber, covered: covered, presenceChanges: presenceChanges, catchingUp: catchingUp)
    }

    mutating func remove(_ id: UInt64, from topic: Topic) {
        topics[topic]?[id] = nil
        if topics[topic]?.isEmpty == true { topics[topic] = nil }
    }

    /// `id`'s catch-up of `topic` has gone out: its live frames are sent from now on.
    mutating func caughtUp(_ id: UInt64, on topic: Topic) {
        topics[topic]?[id]?.catchingUp = false
    }

    /// Hands each subscriber of the item's topic what it gets of it: nothing for an event
    /// it has already (at or before its `since`), the joins and leaves instead of the
    /// whole list for a presence-changes subscriber (nothing when they cancel out), and
    /// a frame to hold while its catch-up goes out.
    func route(_ item: LiveItem, _ deliver: (Subscriber, Delivery) -> Void) {
        guard let receivers = topics[item.topic] else { return }
        for entry in receivers.values {
            if let covered = entry.covered, let position = item.position, position <= covered { continue }
            var frame = item.frame
            if item.isPresence, entry.presenceChanges {
                guard let delta = item.presenceDelta else { continue }
                frame = delta
            }
            deliver(entry.subscriber, entry.catchingUp ? .hold(frame) : .send(frame))
        }
    }
}
