import Foundation
import Synchronization
import Testing
@testable import RoboscopeHTTP
import RoboscopeDomain

/// The read-ahead store's policy with a reader the test controls: which pages it reads,
/// how many at once, how many it keeps. (The integration tests read real pages.)
@Suite(.timeLimit(.minutes(1))) struct ChangesReadAheadStoreTests {
    static let topic = Topic(.workSession, EntityID(UUID().uuidString.lowercased())!)

    static func key(_ since: Int64, limit: Int = 10) -> ChangesReadAhead.Key {
        ChangesReadAhead.Key(topic: topic, since: since, limit: limit)
    }

    @Test func readsTheNextPagesDepthAheadAndHandsEachOverOnce() async throws {
        let reader = GatedReader(releasing: true) { since in since < 100 ? since + 10 : nil }
        let store = ChangesReadAhead(capacity: 16, depth: 2)
        await store.readAhead(Self.key(0), from: reader.source)
        // The page after 0 and, once it is in, the one after that.
        await reader.waitForReads([0, 10])
        #expect(await store.take(Self.key(0))?.last == 10)
        #expect(await store.take(Self.key(0)) == nil, "a page is handed over once")
        // The client took the first page and asks for more: reading goes on from what is kept.
        await store.readAhead(Self.key(10), from: reader.source)
        await reader.waitForReads([0, 10, 20])
        #expect(await store.take(Self.key(10))?.last == 20)
        #expect(await store.take(Self.key(20))?.last == 30)
    }

    @Test func readsThePagesAheadSideBySide() async throws {
        let reader = GatedReader(releasing: false) { since in since < 100 ? since + 10 : nil }
        let store = ChangesReadAhead(capacity: 16, depth: 2, concurrentReads: 2)
        await store.readAhead(Self.key(0), from: reader.source)
        // The second page starts from where the first ends, looked up while both are held.
        await reader.waitForReads([0, 10])
        #expect(reader.lookedUp == [0])
        reader.release()
        #expect(await store.take(Self.key(0))?.last == 10)
        // Asked deeper, the page still being read or kept is looked past, not read again.
        await store.readAhead(Self.key(10), from: reader.source)
        await reader.waitForReads([0, 10, 20])
        #expect(await store.take(Self.key(10))?.last == 20)
        #expect(await store.take(Self.key(20))?.last == 30)
        #expect(reader.started == [0, 10, 20])
    }

    @Test func aPageThatIsNotFinalIsNotKept() async throws {
        let reader = GatedReader(releasing: true) { _ in nil }
        let store = ChangesReadAhead(capacity: 16, depth: 2)
        await store.readAhead(Self.key(50), from: reader.source)
        #expect(await store.take(Self.key(50)) == nil)
        // Nothing was left behind: asked again, it reads again.
        await store.readAhead(Self.key(50), from: reader.source)
        await reader.waitForReads([50, 50])
    }

    @Test func neverMoreReadsAtOnceThanAllowed() async throws {
        let reader = GatedReader(releasing: false) { since in since + 10 }
        let store = ChangesReadAhead(capacity: 16, depth: 1, concurrentReads: 2)
        for since in stride(from: Int64(0), to: 100, by: 10) {
            await store.readAhead(Self.key(since, limit: 7), from: reader.source)
        }
        await reader.waitForReads([0, 10])
        #expect(reader.started == [0, 10], "the others were not started")
        reader.release()
        #expect(await store.take(Self.key(0, limit: 7))?.last == 10)
        #expect(await store.take(Self.key(10, limit: 7))?.last == 20)
        #expect(await store.take(Self.key(20, limit: 7)) == nil)
    }

    @Test func keepsAtMostItsCapacityDroppingTheOldest() async throws {
        let reader = GatedReader(releasing: true) { since in since + 1 }
        let store = ChangesReadAhead(capacity: 3, depth: 1)
        for since in Int64(0)..<6 {
            await store.readAhead(Self.key(since * 100), from: reader.source)
            await reader.waitForReads((0...since).map { $0 * 100 })
            await reader.waitUntilFinished(Int(since) + 1)
        }
        for since in Int64(0)..<3 { #expect(await store.take(Self.key(since * 100)) == nil, "dropped: \(since)") }
        for since in Int64(3)..<6 { #expect(await store.take(Self.key(since * 100))?.last == since * 100 + 1) }
    }

    @Test func nothingIsReadAheadWithoutCapacity() async throws {
        let reader = GatedReader(releasing: true) { since in since + 10 }
        let store = ChangesReadAhead(capacity: 0)
        await store.readAhead(Self.key(0), from: reader.source)
        #expect(await store.take(Self.key(0)) == nil)
        #expect(reader.started.isEmpty)
    }
}

/// A reader whose pages end at `last(since)` (nil: not final), that records what it was
/// asked for and, unless releasing, holds every read until `release()`. Tests wait on
/// its state changing, not on time (the suite's time limit ends a wait that never holds).
final class GatedReader: Sendable {
    private struct State {
        var started: [Int64] = []
        var lookedUp: [Int64] = []
        var finished = 0
        var open: Bool
        var held: [CheckedContinuation<Void, Never>] = []
        var waiters: [(holds: @Sendable (State) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []

        /// The waiters whose condition now holds, taken out to be resumed.
        mutating func satisfied() -> [CheckedContinuation<Void, Never>] {
            let state = self
            let ready = waiters.filter { $0.holds(state) }.map(\.continuation)
            waiters.removeAll { $0.holds(state) }
            return ready
        }
    }

    private let state: Mutex<State>
    private let last: @Sendable (Int64) -> Int64?

    init(releasing: Bool, last: @escaping @Sendable (Int64) -> Int64?) {
        state = Mutex(State(open: releasing))
        self.last = last
    }

    var started: [Int64] { state.withLock { $0.started } }
    var lookedUp: [Int64] { state.withLock { $0.lookedUp } }

    /// Reads pages through `read`; looks a page's end up at once (the end of a full page
    /// is where a final one ends, in this model).
    var source: ChangesReadAhead.Source {
        ChangesReadAhead.Source(
            read: read,
            end: { [self] key in
                change { $0.lookedUp.append(key.since) }
                return last(key.since)
            })
    }

    private var read: @Sendable (ChangesReadAhead.Key) async -> ChangesReadAhead.Page? {
        { [self] key in
            change { $0.started.append(key.since) }
            await withCheckedContinuation { continuation in
                let open = state.withLock { state in
                    if !state.open { state.held.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
            defer { change { $0.finished += 1 } }
            return last(key.since).map { ChangesReadAhead.Page(messages: [], last: $0) }
        }
    }

    func release() {
        let held = state.withLock { state in
            state.open = true
            defer { state.held.removeAll() }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }

    /// Returns once the reads started are exactly `expected`.
    func waitForReads(_ expected: [Int64]) async {
        await wait { $0.started == expected }
    }

    func waitUntilFinished(_ count: Int) async {
        await wait { $0.finished >= count }
    }

    private func change(_ body: (inout State) -> Void) {
        let ready = state.withLock { state in
            body(&state)
            return state.satisfied()
        }
        for continuation in ready { continuation.resume() }
    }

    private func wait(until holds: @escaping @Sendable (State) -> Bool) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if holds(state) { return true }
                state.waiters.append((holds, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}
