/// Items by the time they fall due, earliest first: a binary min-heap, so that finding
/// what is due costs the number of due items (times log n), not a walk over everything
/// scheduled.
struct DueTimes<Instant: Comparable, Item> {
    private var entries: [(at: Instant, item: Item)] = []

    mutating func schedule(_ item: Item, at time: Instant) {
        entries.append((time, item))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].at < entries[parent].at else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest item if it is due at `now`.
    mutating func popDue(now: Instant) -> Item? {
        guard let first = entries.first, first.at <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < entries.count, entries[left].at < entries[smallest].at { smallest = left }
                if right < entries.count, entries[right].at < entries[smallest].at { smallest = right }
                guard smallest != parent else { break }
                entries.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first.item
    }
}
