import Foundation
import Synchronization
import Testing
@testable import RoboscopeHTTP
import RoboscopeDomain

/// What the place cache reads, keeps and forgets, with a reader the test counts. (The
/// contract tests create markers through it against a real database.)
@Suite struct WorkSessionPlacesTests {
    /// Sessions the reader knows, and the ids it was asked for.
    final class Reader: Sendable {
        let sessions: [EntityID: EntityID]
        let asked = Mutex<[EntityID]>([])

        init(_ sessions: [EntityID: EntityID]) { self.sessions = sessions }

        func read(_ id: EntityID) -> WorkSessionPlace? {
            asked.withLock { $0.append(id) }
            return sessions[id].map { WorkSessionPlace(id: id, spaceID: $0) }
        }

        var reads: Int { asked.withLock { $0.count } }
    }

    static func ids(_ count: Int) -> [EntityID] { (0..<count).map { _ in EntityID.random() } }

    @Test func aPlaceIsReadOnceAndAnUnknownSessionEveryTime() async throws {
        let (session, space, unknown) = (EntityID.random(), EntityID.random(), EntityID.random())
        let reader = Reader([session: space])
        let places = WorkSessionPlaces { reader.read($0) }
        for _ in 0..<3 {
            #expect(try await places.place(session) == WorkSessionPlace(id: session, spaceID: space))
        }
        #expect(reader.reads == 1)
        #expect(try await places.place(unknown) == nil)
        #expect(try await places.place(unknown) == nil)
        #expect(reader.reads == 3, "nothing is kept for a session that does not exist")
    }

    @Test func aForgottenPlaceIsReadAgain() async throws {
        let session = EntityID.random()
        let reader = Reader([session: EntityID.random()])
        let places = WorkSessionPlaces { reader.read($0) }
        _ = try await places.place(session)
        places.forget(session)
        _ = try await places.place(session)
        #expect(reader.reads == 2)
    }

    @Test func aFullCacheStartsAfreshInsteadOfGrowing() async throws {
        let sessions = Self.ids(5)
        let reader = Reader(Dictionary(uniqueKeysWithValues: sessions.map { ($0, EntityID.random()) }))
        let places = WorkSessionPlaces(capacity: 3) { reader.read($0) }
        for session in sessions { _ = try await places.place(session) }
        #expect(places.count <= 3)
        // The last two were kept after the reset at the fourth.
        _ = try await places.place(sessions[4])
        _ = try await places.place(sessions[3])
        #expect(reader.reads == 5)
        _ = try await places.place(sessions[0])
        #expect(reader.reads == 6)
    }
}
