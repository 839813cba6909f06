/// Work waiting for a pool's connections, in one queue per owner (a tenant), served
/// round robin, with at most `maxRunningPerOwner` of an owner's items running at once.
///
/// One tenant's burst waits behind its own earlier work, never in front of another
/// tenant's: a tenant at its share leaves the remaining connections to the others, and
/// among owners with work waiting each gets the next free connection in turn (the fair
/// queue Supavisor keeps per tenant in front of Postgres). Work without an owner (the
/// process's own, outside any request) has a queue of its own and no cap.
public struct FairQueue<Item> {
    public let maxRunningPerOwner: Int
    /// An owner's own cap (a tenant's plan), instead of `maxRunningPerOwner`.
    private let limitOf: (@Sendable (String) -> Int?)?
    private var queues: [String?: Line] = [:]
    /// Owners with items waiting, the next to be served first.
    private var turns: [String?] = []
    private var running: [String?: Int] = [:]
    /// Items waiting, every owner's.
    public private(set) var count = 0

    /// One owner's items, first in first out.
    private struct Line {
        var items: [Item] = []
        var head = 0

        var isEmpty: Bool { head == items.count }
        var count: Int { items.count - head }

        mutating func append(_ item: Item) { items.append(item) }

        mutating func removeFirst() -> Item {
            let item = items[head]
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 1024, head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
            return item
        }
    }

    public init(maxRunningPerOwner: Int, limitOf: (@Sendable (String) -> Int?)? = nil) {
        self.maxRunningPerOwner = max(1, maxRunningPerOwner)
        self.limitOf = limitOf
    }

    /// How many of `owner`'s items may run at once.
    public func limit(of owner: String) -> Int {
        max(1, limitOf?(owner) ?? maxRunningPerOwner)
    }

    public var isEmpty: Bool { count == 0 }

    /// Whether `owner` may start another item now.
    public func mayRun(_ owner: String?) -> Bool {
        guard let owner else { return true }
        return running[owner, default: 0] < limit(of: owner)
    }

    /// Queues `item`; true when it could start at once (its owner is under its share).
    @discardableResult
    public mutating func append(_ item: Item, owner: String?) -> Bool {
        if queues[owner]?.isEmpty ?? true { turns.append(owner) }
        queues[owner, default: Line()].append(item)
        count += 1
        return mayRun(owner)
    }

    /// The next item whose owner is under its share, counted as running until
    /// `finished(owner:)`; nil when every owner with work waiting is at its share.
    public mutating func take() -> (item: Item, owner: String?)? {
        guard let turn = turns.firstIndex(where: { mayRun($0) }) else { return nil }
        let owner = turns.remove(at: turn)
        let item = queues[owner]!.removeFirst()
        if queues[owner]!.isEmpty {
            queues[owner] = nil
        } else {
            turns.append(owner)
        }
        count -= 1
        running[owner, default: 0] += 1
        return (item, owner)
    }

    /// Whether `take` would return an item now.
    public var hasRunnable: Bool { turns.contains(where: { mayRun($0) }) }

    public mutating func finished(owner: String?) {
        let left = running[owner, default: 1] - 1
        running[owner] = left > 0 ? left : nil
    }

    /// Items of `owner` running now.
    public func runningCount(of owner: String?) -> Int { running[owner, default: 0] }

    /// Items of `owner` waiting now.
    public func waitingCount(of owner: String?) -> Int { queues[owner]?.count ?? 0 }
}
