/// A marker's details for each marker event of a page of a topic (clients get a marker
/// with its details as of the event's transaction, as `eventlog.delivery_rows` gives
/// them), found in the page's own rows wherever they can be.
///
/// Looking each one up probes the whole log's stream index once per marker event: three
/// quarters of a catch-up page's time, and one B-tree level more as the log grows
/// (benchmarks/analysis.md, "The catch-up's details from its own page").
///
/// A topic's rows come in commit order, each transaction's together, with transaction
/// ids rising (the append numbers a topic under its lock, and its transaction id is
/// assigned after its locks: docs/ordering.md). A marker's details are on its topic. So
/// once the page has moved past a marker's transaction, the newest details it has
/// shown for the marker, up to there, are its details as of that transaction. A marker
/// needs a look-up only when the page shows none of its details up to there (they are
/// older than the page), or when its transaction is the page's last and the page's end
/// may cut it. The read looks the latter up with the page's rows (`markerLookedUp`), so
/// that a page inside one large transaction hands its rows out as they come.
///
/// Rows come out in the order they went in, each once its details are known: a marker
/// event, and the rows after it, wait for the end of its transaction, and the rows from
/// a marker that needs a look-up on wait for the end of the page.
struct PageDetails<Row> {
    /// What a row is, as far as details go.
    enum Event: Equatable {
        /// A marker event that carries its details (any but `marker.deleted`).
        case marker(stream: String)
        /// A marker event whose details the read looked up already.
        case markerLookedUp(details: [UInt8]?)
        /// A `marker_details` event: its data, nil for `marker_details.deleted`.
        case details(stream: String, data: [UInt8]?)
        /// Anything else: no details.
        case other
    }

    struct Ready {
        var row: Row
        var details: [UInt8]?
    }

    private enum State {
        case known([UInt8]?)
        /// Its transaction is still being read.
        case open(stream: String)
        case lookUp
    }

    private struct Held {
        var row: Row
        var transactionID: UInt64
        var state: State
    }

    /// Each stream's newest details in the page so far (nil once deleted).
    private var newest: [String: [UInt8]?] = [:]
    private var held: [Held] = []
    /// How many of `held` have been handed out.
    private var handedOut = 0
    private var transactionID: UInt64?

    init() {}

    /// Takes the page's next row; hands `ready` the rows now ready, in order.
    mutating func add(_ row: Row, transactionID: UInt64, event: Event, ready: (Ready) throws -> Void) rethrows {
        if let current = self.transactionID, current != transactionID {
            close(current)
        }
        self.transactionID = transactionID
        let state: State
        switch event {
        case .marker(let stream): state = .open(stream: stream)
        case .markerLookedUp(let details): state = .known(details)
        case .details(let stream, let data):
            newest[stream] = .some(data)
            state = .known(nil)
        case .other: state = .known(nil)
        }
        try handOut(ready)
        // Nothing waits before it (the usual case): out at once, without being held.
        if held.isEmpty, case .known(let details) = state {
            return try ready(Ready(row: row, details: details))
        }
        held.append(Held(row: row, transactionID: transactionID, state: state))
    }

    /// The page has ended: the rows of the markers still waiting, in order, whose details
    /// must be looked up (those the page held none for, and the last transaction's unless
    /// it is whole).
    mutating func finish(lastTransactionWhole: Bool = false) -> [Row] {
        if lastTransactionWhole, let transactionID {
            close(transactionID)
        }
        var lookUps: [Row] = []
        for index in handedOut..<held.count {
            switch held[index].state {
            case .open, .lookUp:
                held[index].state = .lookUp
                lookUps.append(held[index].row)
            case .known:
                break
            }
        }
        return lookUps
    }

    /// The answers to `finish()`'s look-ups, in its order; hands `ready` every row left.
    mutating func resolve(_ answers: [[UInt8]?], ready: (Ready) throws -> Void) rethrows {
        var next = answers.makeIterator()
        for index in handedOut..<held.count {
            if case .lookUp = held[index].state {
                held[index].state = .known(next.next() ?? nil)
            }
        }
        try handOut(ready)
    }

    /// The transaction `transactionID` is complete in the page: its markers take their
    /// streams' newest details, or wait for a look-up when the page has shown none.
    private mutating func close(_ transactionID: UInt64) {
        var index = held.count - 1
        while index >= handedOut, held[index].transactionID == transactionID {
            if case .open(let stream) = held[index].state {
                held[index].state = newest[stream].map { .known($0) } ?? .lookUp
            }
            index -= 1
        }
    }

    /// Hands out the held rows whose details are known, up to the first still waiting.
    private mutating func handOut(_ ready: (Ready) throws -> Void) rethrows {
        while handedOut < held.count, case .known(let details) = held[handedOut].state {
            let row = held[handedOut].row
            handedOut += 1
            try ready(Ready(row: row, details: details))
        }
        if handedOut == held.count, !held.isEmpty {
            held.removeAll(keepingCapacity: true)
            handedOut = 0
        }
    }
}
