import Foundation
import RoboscopeDomain
@testable import RoboscopeGateway
import Testing

/// The presence sweep reads a session again only once a message says someone may be
/// there, and reads everything after a reconnect.
@Suite struct PresenceSweepTests {
    let a = EntityID(UUID().uuidString.lowercased())!
    let b = EntityID(UUID().uuidString.lowercased())!

    @Test func anEmptySessionIsSkippedUntilAMessageNamesIt() {
        var sweep = PresenceSweep()
        var present: [EntityID: [String]] = [a: [], b: ["ana"]]
        var reads: [EntityID] = []
        let read = { (session: EntityID) -> [String] in
            reads.append(session)
            return present[session] ?? []
        }
        sweep.sweep([a, b], users: read)
        #expect(Set(reads) == [a, b])
        reads = []
        sweep.sweep([a, b], users: read)
        #expect(reads == [b], "a was empty and nothing named it since")

        // Someone heartbeats in a: its channel says so.
        present[a] = ["ben"]
        sweep.heard(a)
        reads = []
        sweep.sweep([a, b], users: read)
        #expect(Set(reads) == [a, b])

        // b empties (its users expired on that read): read once more, then skipped.
        present[b] = []
        reads = []
        sweep.sweep([a, b], users: read)
        sweep.sweep([a, b], users: read)
        #expect(reads.filter { $0 == b }.count == 1)
    }

    @Test func aReconnectReadsEverySessionAgain() {
        var sweep = PresenceSweep()
        sweep.sweep([a, b]) { _ in [] }
        #expect(!sweep.needsRead(a) && !sweep.needsRead(b))
        sweep.forgetAll()
        #expect(sweep.needsRead(a) && sweep.needsRead(b))
    }

    @Test func aSessionNoLongerFollowedIsForgotten() {
        var sweep = PresenceSweep()
        sweep.sweep([a, b]) { _ in [] }
        sweep.sweep([b]) { _ in [] }
        #expect(sweep.needsRead(a), "followed again later: read first")
    }
}
