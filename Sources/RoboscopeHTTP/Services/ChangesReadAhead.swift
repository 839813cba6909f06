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
/// Only a final page is kept: one that is full and has more after it. On a topic, a
/// later commit always gets a later position (docs/ordering.md), and a message never
/// changes once written (a marker's details are those of its own transaction), so such
/// a page reads the same at any later time and serving it from memory answers exactly
/// what a fresh read would. A page that ends the topic could still grow: it is never
/// kept, and its reader reads again.
///
/// Bounded twice: at most `capacity` pages are kept (the oldest go first), and at most
/// `concurrentReads` are being read at once, so read-ahead never takes more than that
/// many of the pool's connections from requests. A client that stops leaves at most
/// `depth` pages behind, dropped as others are read.
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

    /// Reads the page of a key: nil when it is not final (or the read failed).
    typealias Reader = @Sendable (Key) async -> Page?

    private struct Entry {
        let id: UInt64
        let read: Task<Page?, Never>
        /// The page, once read and kept.
        var page: Page?
        /// How many pages, this one included, the client should find read ahead.
        var depth: Int
    }

    let capacity: Int
    /// Pages read ahead of a client's last request.
    let depth: Int
    let concurrentReads: Int
    private var entries: [Key: Entry] = [:]
    /// Keys in the order they were read, oldest first (for eviction).
    private var order: [Key] = []
    private var reading = 0
    private var nextID: UInt64 = 0
    private let hits = Counter(label: "roboscope_changes_read_ahead_hits_total")
    private let kept = Counter(label: "roboscope_changes_read_ahead_reads_total", dimensions: [("outcome", "kept")])
    private let notKept = Counter(label: "roboscope_changes_read_ahead_reads_total", dimensions: [("outcome", "not_kept")])

    /// `capacity` 0 reads nothing ahead. Two pages ahead keep a Postgres backend reading
    /// while the last page read is rendered and the one before is sent.
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
    func readAhead(_ key: Key, with read: @escaping Reader) {
        readAhead(key, depth: depth, with: read)
    }

    private func readAhead(_ key: Key, depth: Int, with read: @escaping Reader) {
        guard depth > 0 else { return }
        if var entry = entries[key] {
            if let page = entry.page {
                readAhead(key.next(after: page.last), depth: depth - 1, with: read)
            } else if entry.depth < depth {
                // Still being read: its completion reads on as far as asked.
                entry.depth = depth
                entries[key] = entry
            }
            return
        }
        guard reading < concurrentReads else { return }
        reading += 1
        nextID &+= 1
        let id = nextID
        entries[key] = Entry(id: id, read: Task {
            let page = await read(key)
            self.finished(key, id: id, page: page, read: read)
            return page
        }, depth: depth)
        order.append(key)
        while order.count > capacity {
            entries.removeValue(forKey: order.removeFirst())?.read.cancel()
        }
    }

    private func finished(_ key: Key, id: UInt64, page: Page?, read: @escaping Reader) {
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
        entries[key] = entry
        readAhead(key.next(after: page.last), depth: entry.depth - 1, with: read)
    }
}
