import Metrics
import RoboscopeDomain

/// Pages of the changes feed read before a client asks for them.
///
/// A client catching up asks for page after page, each from the last position of the
/// one before, and between two requests it takes in what it got (parses it, stores it).
/// Without reading ahead, the server idles while the client works and the client waits
/// while Postgres reads: the two take turns. With it, the pages after the one just sent
/// are read and rendered meanwhile (`depth` of them), and the next request is answered
/// from memory.
///
/// The pages ahead are read side by side, not one after the other: where a page ends is
/// looked up in the topic's index (a fraction of a millisecond) while the page itself is
/// read, and the page after it starts from there. One backend reading a topic is slower
/// than a client can take pages in; two keep both cores busy (docs/benchmarks.md).
///
/// Only a final page is kept: one that is full and has more after it. On a topic, a
/// later commit always gets a later position (docs/ordering.md), and a message never
/// changes once written (a marker's details are those of its own transaction), so such
/// a page reads the same at any later time and serving it from memory answers exactly
/// what a fresh read would. A page that ends the topic could still grow: it is never
/// kept, and its reader reads again.
///
/// Bounded twice: at most `capacity` pages are kept (the oldest go first), and at most
/// `concurrentReads` are being read at once (and as many ends looked up), so read-ahead
/// never takes more than twice that many of the pool's connections from requests. A
/// client that stops leaves at most `depth` pages behind, dropped as others are read.
public actor ChangesReadAhead {
    struct Key: Hashable, Sendable {
        let topic: Topic
        let since: Int64
        let limit: Int

        /// The page that follows one ending at `last`: the key a client asks with next.
        func next(after last: Int64) -> Key {
            Key(topic: topic, since: last, limit: limit)
        }
    }

    /// A rendered page: its messages, comma-separated, and the position of the last.
    struct Page: Sendable {
        let messages: [UInt8]
        let last: Int64
    }

    /// Where pages come from.
    struct Source: Sendable {
        /// Reads the page of a key: nil when it is not final (or the read failed).
        let read: @Sendable (Key) async -> Page?
        /// Where the page of a key ends (the position of its last event) when it is
        /// full, without reading it: nil otherwise (or when the look-up failed).
        let end: @Sendable (Key) async -> Int64?
    }

    private struct Entry {
        let id: UInt64
        let read: Task<Page?, Never>
        /// The page, once read and kept.
        var page: Page?
        /// How many pages, this one included, the client should find read ahead.
        var depth: Int
        /// Where the page ends, once known: looked up, or from the page itself.
        var end: Int64?
        /// Whether its end has been looked up (once at most: a page not full waits for its read).
        var endAsked = false
    }

    let capacity: Int
    /// Pages read ahead of a client's last request.
    let depth: Int
    let concurrentReads: Int
    private var entries: [Key: Entry] = [:]
    /// Keys in the order they were read, oldest first (for eviction).
    private var order: [Key] = []
    private var reading = 0
    private var lookingUp = 0
    private var nextID: UInt64 = 0
    private let hits = Counter(label: "roboscope_changes_read_ahead_hits_total")
    private let kept = Counter(label: "roboscope_changes_read_ahead_reads_total", dimensions: [("outcome", "kept")])
    private let notKept = Counter(
        label: "roboscope_changes_read_ahead_reads_total", dimensions: [("outcome", "not_kept")])

    /// `capacity` 0 reads nothing ahead. Two pages ahead, read side by side, keep two
    /// Postgres backends reading while the client takes in the page it was sent.
    public init(capacity: Int, depth: Int = 2, concurrentReads: Int = 2) {
        self.capacity = capacity
        self.depth = min(depth, capacity)
        self.concurrentReads = concurrentReads
    }

    /// The page read ahead for `key`, once its read has finished; nil when none was (or
    /// its read failed, or found the page not final). Taken out of the store either way.
    func take(_ key: Key) async -> Page? {
        guard let entry = entries.removeValue(forKey: key) else { return nil }
        order.removeAll { $0 == key }
        let page = await entry.read.value
        if page != nil { hits.increment() }
        return page
    }

    /// Makes sure the `depth` pages from `key` on are kept or being read, as far as
    /// `concurrentReads` allows: a client that has just been sent the page before `key`
    /// asks for them next.
    func readAhead(_ key: Key, from source: Source) {
        readAhead(key, depth: depth, from: source)
    }

    private func readAhead(_ key: Key, depth: Int, from source: Source) {
        guard depth > 0 else { return }
        if var entry = entries[key] {
            entry.depth = max(entry.depth, depth)
            entries[key] = entry
            return readOn(after: key, from: source)
        }
        guard reading < concurrentReads else { return }
        reading += 1
        nextID &+= 1
        let id = nextID
        entries[key] = Entry(
            id: id,
            read: Task {
                let page = await source.read(key)
                self.finished(key, id: id, page: page, source: source)
                return page
            }, depth: depth)
        order.append(key)
        while order.count > capacity {
            entries.removeValue(forKey: order.removeFirst())?.read.cancel()
        }
        readOn(after: key, from: source)
    }

    /// Reads ahead past the page of `key` as deep as its entry asks, from where the page
    /// ends; until that is known, looks it up (while the page is still being read).
    private func readOn(after key: Key, from source: Source) {
        guard var entry = entries[key], entry.depth > 1 else { return }
        if let end = entry.end {
            return readAhead(key.next(after: end), depth: entry.depth - 1, from: source)
        }
        guard !entry.endAsked, lookingUp < concurrentReads else { return }
        entry.endAsked = true
        entries[key] = entry
        lookingUp += 1
        Task { [id = entry.id] in
            let end = await source.end(key)
            self.lookedUp(key, id: id, end: end, source: source)
        }
    }

    private func lookedUp(_ key: Key, id: UInt64, end: Int64?, source: Source) {
        lookingUp -= 1
        // Not full (yet): its own read decides, and reads on if it is final.
        guard let end, var entry = entries[key], entry.id == id, entry.end == nil else { return }
        entry.end = end
        entries[key] = entry
        readOn(after: key, from: source)
    }

    private func finished(_ key: Key, id: UInt64, page: Page?, source: Source) {
        reading -= 1
        (page != nil ? kept : notKept).increment()
        // A client may have taken the entry already (it then asks for what follows), or
        // a newer read of the key replaced it.
        guard var entry = entries[key], entry.id == id else { return }
        guard let page else {
            // Nothing to keep: no entry is left behind.
            entries.removeValue(forKey: key)
            order.removeAll { $0 == key }
            return
        }
        entry.page = page
        entry.end = page.last
        entries[key] = entry
        readOn(after: key, from: source)
    }
}
