import RoboscopeDomain

/// Which work sessions the presence thread reads at each sweep (every 2 s), the read
/// that expires and announces the users who stopped heartbeating. A session read empty
/// stays empty until someone heartbeats in it, and every heartbeat is announced on the
/// session's channel, which the thread follows: so a session read empty is skipped until
/// a message names it. With 1,000 sessions followed and nobody present, that was 500
/// Redis round trips a second per gateway, idle.
///
/// After a reconnect to Redis, messages may have been missed: every session is read
/// again (`forgetAll`).
struct PresenceSweep {
    private var knownEmpty: Set<EntityID> = []

    /// Whether the sweep must read `session`.
    func needsRead(_ session: EntityID) -> Bool {
        !knownEmpty.contains(session)
    }

    /// The sweep over `sessions` (the ones followed now): `users` reads one, for those
    /// that need it. Sessions no longer followed are forgotten.
    mutating func sweep(_ sessions: [EntityID], users: (EntityID) throws -> [String]) rethrows {
        var empty: Set<EntityID> = []
        for session in sessions {
            if !needsRead(session) {
                empty.insert(session)
            } else if try users(session).isEmpty {
                empty.insert(session)
            }
        }
        knownEmpty = empty
    }

    /// A presence message named the session: someone may be there now.
    mutating func heard(_ session: EntityID) {
        knownEmpty.remove(session)
    }

    mutating func forgetAll() {
        knownEmpty.removeAll()
    }
}
