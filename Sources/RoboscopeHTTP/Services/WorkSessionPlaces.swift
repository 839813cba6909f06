import RoboscopeDomain
import Synchronization

/// The places (id and space) of the work sessions that marker creates name.
///
/// A create needs only its session's place: for the locks, and for the marker's route.
/// Reading the session before every create cost one more trip through the pool and 7% of
/// Postgres's time per create (benchmarks/analysis.md). A place never changes once the
/// session exists, so it is read once and kept. That the session still exists is checked
/// where it matters, by the append under the session's lock (its `requiredStreams`):
/// a session deleted since is refused there, and its place forgotten.
///
/// Bounded: when `capacity` places are kept, the next one read starts the set afresh
/// (an uncached create costs one read, as before).
final class WorkSessionPlaces: Sendable {
    private let known = Mutex<[EntityID: EntityID]>([:])
    /// Reads a session's place from the projections: nil when there is no such session.
    private let read: @Sendable (EntityID) async throws -> WorkSessionPlace?
    let capacity: Int

    init(capacity: Int = 10_000, read: @escaping @Sendable (EntityID) async throws -> WorkSessionPlace?) {
        self.capacity = capacity
        self.read = read
    }

    /// The session's place, or nil when no session has this id.
    func place(_ id: EntityID) async throws -> WorkSessionPlace? {
        if let spaceID = known.withLock({ $0[id] }) {
            return WorkSessionPlace(id: id, spaceID: spaceID)
        }
        guard let place = try await read(id) else { return nil }
        known.withLock { places in
            if places.count >= capacity { places.removeAll(keepingCapacity: true) }
            places[id] = place.spaceID
        }
        return place
    }

    /// Drops a place the append found gone.
    func forget(_ id: EntityID) {
        _ = known.withLock { $0.removeValue(forKey: id) }
    }

    var count: Int { known.withLock { $0.count } }
}
