/// When each connection of a shard next needs its tick (a ping due, a silence too long,
/// a handshake, close or token past its deadline), so that a shard's tick visits only
/// the connections whose time has come instead of every connection four times a
/// second: with 100,000 connections held, walking them all was a third of a core spent
/// idle.
///
/// A connection's deadline only moves later as it is heard from, which needs no work
/// here: when the earlier deadline comes, its tick finds nothing to do and schedules the
/// later one. A deadline that moves earlier (a close, a short-lived token) is scheduled
/// at once; the later entry it replaces stays in the heap until its time and is then
/// dropped, as are the entries of connections that are gone.
struct TickSchedule<Instant: Comparable> {
    private struct Entry {
        var id: UInt64
        var at: Instant
    }

    private var heap = DueTimes<Instant, Entry>()
    /// Each scheduled connection's earliest entry: an entry of another time is stale.
    private var scheduled: [UInt64: Instant] = [:]

    /// Connections with a deadline.
    var count: Int { scheduled.count }

    /// `id` needs a tick at `deadline` (nil: never again). A deadline later than the one
    /// already scheduled changes nothing: that one comes first and reschedules.
    mutating func schedule(_ id: UInt64, at deadline: Instant?) {
        guard let deadline else {
            scheduled[id] = nil
            return
        }
        if let current = scheduled[id], current <= deadline { return }
        scheduled[id] = deadline
        heap.schedule(Entry(id: id, at: deadline), at: deadline)
    }

    mutating func remove(_ id: UInt64) {
        scheduled[id] = nil
    }

    /// The connections due at `now`, each once, unscheduled: the caller ticks each, then
    /// schedules its next deadline.
    mutating func popDue(now: Instant) -> [UInt64] {
        var due: [UInt64] = []
        while let entry = heap.popDue(now: now) {
            guard scheduled[entry.id] == entry.at else { continue }
            scheduled[entry.id] = nil
            due.append(entry.id)
        }
        return due
    }
}
