import RoboscopeDomain
import RoboscopePostgres

/// One connection's catch-ups, paged as its socket drains: which topic's page to ask the
/// catch-up reader for next, and when; the live frames of a topic held back until its
/// catch-up is sent; whether a page that arrives is still wanted.
///
/// A connection's catch-ups go one at a time, in the order they were granted, with one
/// page asked at a time and only while fewer than `lowWater` bytes wait for its socket:
/// a client that stops reading stops costing reads, and what it has queued (pages and
/// held frames together) counts against the slow-reader bound like anything else.
///
/// Pure: the shard asks it and carries out the answers (tests drive it alone).
struct ConnectionCatchUps {
    /// One granted subscription's catch-up: the topic's events after `after` through
    /// `through`, read up to `until`.
    struct Progress {
        let topic: Topic
        /// The subscription's ticket: withdrawn by `unsubscribe` or a close, which the
        /// reader sees before reading its next page.
        let grant: PendingGrant
        var after: Int64
        let through: Int64
        let until: LogCursor
        /// The topic's head on the primary at `until`, against which a standby's is compared.
        let head: TopicHead?
        /// Where its pages are read, once the first page decided (`StandbyReads`).
        var onStandby: Bool?
        /// Live frames of the topic that came after the grant, sent once the catch-up is.
        var held: [SharedFrame] = []
    }

    /// What the reader is asked for: a page of `progress.topic` after `progress.after`.
    struct PageAsk {
        let progress: Progress
        let maxBytes: Int
    }

    enum Arrival {
        /// Nobody wants this page (unsubscribed, or a superseded subscription): drop it.
        case stale
        /// Queue the page; more follow.
        case more
        /// Queue the page, then these held live frames: the subscription is live now.
        case completed(held: [SharedFrame])
    }

    /// Below this many queued bytes the next page is asked for.
    let lowWater: Int
    /// The most bytes of events one page holds (at least one event).
    let pageBytes: Int
    private(set) var queue: [Progress] = []
    /// The grant whose page is being read (nil: none asked).
    private var asked: ObjectIdentifier?
    /// Bytes of the live frames held back, on top of the socket's queue.
    private(set) var heldBytes = 0

    init(lowWater: Int, pageBytes: Int) {
        self.lowWater = lowWater
        self.pageBytes = pageBytes
    }

    var isEmpty: Bool { queue.isEmpty }

    /// A subscription was granted with a catch-up: it goes after those under way.
    mutating func start(_ topic: Topic, grant: PendingGrant, range: CatchUpRange, until: LogCursor, head: TopicHead?) {
        queue.append(
            Progress(topic: topic, grant: grant, after: range.after, through: range.through, until: until, head: head))
    }

    /// The page to ask for now, if any: none while one is being read, or while the socket
    /// still has `lowWater` bytes or more to take.
    mutating func nextAsk(queuedBytes: Int) -> PageAsk? {
        guard asked == nil, let first = queue.first, queuedBytes < lowWater else { return nil }
        asked = ObjectIdentifier(first.grant)
        return PageAsk(progress: first, maxBytes: pageBytes)
    }

    /// Whether the next page waits for the socket: a catch-up is under way, no page is
    /// being read, and the socket still has `lowWater` bytes or more to take.
    func waitsForSocket(queuedBytes: Int) -> Bool {
        asked == nil && !queue.isEmpty && queuedBytes >= lowWater
    }

    /// A live frame of `topic`, whose catch-up is under way: kept until it is sent.
    mutating func hold(_ frame: SharedFrame, for topic: Topic) {
        guard let index = queue.firstIndex(where: { $0.topic == topic }) else { return }
        queue[index].held.append(frame)
        heldBytes += frame.count
    }

    /// A page of `grant`'s catch-up arrived, ending at `last` (nil: it was empty).
    mutating func arrived(_ grant: PendingGrant, last: Int64?, onStandby: Bool?) -> Arrival {
        if asked == ObjectIdentifier(grant) { asked = nil }
        guard let first = queue.first, first.grant === grant else { return .stale }
        if let last, last < first.through {
            queue[0].after = last
            queue[0].onStandby = onStandby
            return .more
        }
        queue.removeFirst()
        heldBytes -= first.held.reduce(0) { $0 + $1.count }
        return .completed(held: first.held)
    }

    /// The subscription to `topic` ended (unsubscribed, or no longer visible): its
    /// catch-up stops, its held frames go. The reader skips its withdrawn page.
    mutating func cancel(_ topic: Topic) {
        guard let index = queue.firstIndex(where: { $0.topic == topic }) else { return }
        let cancelled = queue.remove(at: index)
        cancelled.grant.withdraw()
        heldBytes -= cancelled.held.reduce(0) { $0 + $1.count }
        if asked == ObjectIdentifier(cancelled.grant) { asked = nil }
    }

    /// The connection closed: every catch-up stops.
    mutating func cancelAll() {
        for progress in queue { progress.grant.withdraw() }
        queue = []
        heldBytes = 0
        asked = nil
    }
}
