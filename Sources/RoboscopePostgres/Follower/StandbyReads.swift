import Metrics

/// Catch-up reads on a standby (`--read-database-url`), kept exact.
///
/// A topic's transactions commit one after another (the append numbers a topic under
/// its lock), and a standby replays commits in the primary's order, so at any moment a
/// standby holds a prefix of every topic. When that prefix ends where the primary's
/// does (the same head, read just before on each), a page of the topic read on the
/// standby is the page the primary would give: nothing the primary has acknowledged
/// is missing, so a client that has just written reads its write. Otherwise, and
/// whenever the standby cannot answer, the primary serves the read.
public enum StandbyReads {
    public enum Source: String, Sendable {
        case standby, primary
    }

    /// Whether a read of the topic may go to the standby.
    public static func mayRead(primaryHead: TopicHead?, standbyHead: TopicHead?) -> Bool {
        primaryHead == standbyHead
    }

    /// Counts where a catch-up read went: `reader` is `changes` or `websocket`.
    public static func count(_ reader: String, _ source: Source) {
        counters["\(reader)/\(source.rawValue)"]?.increment()
    }

    /// Made once: a page of the feed counts one read, and no counter is built per page.
    private static let counters = Dictionary(
        uniqueKeysWithValues: ["changes", "websocket"].flatMap { reader in
            [Source.standby, .primary].map { source in
                (
                    "\(reader)/\(source.rawValue)",
                    Counter(
                        label: "roboscope_catch_up_reads_total",
                        dimensions: [("reader", reader), ("source", source.rawValue)])
                )
            }
        })
}
