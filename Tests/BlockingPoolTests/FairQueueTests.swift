@testable import BlockingPool
import Dispatch
import Logging
import Testing

/// The pools' fair share between tenants (issue 45): an owner at its share waits in its
/// own line, owners with work waiting are served in turn, and work without an owner has
/// no cap.
@Suite struct FairQueueTests {
    @Test func anOwnerAtItsShareLeavesTheNextItemToAnother() {
        var queue = FairQueue<Int>(maxRunningPerOwner: 2)
        for item in 1...4 { queue.append(item, owner: "acme") }
        let globexRuns = queue.append(10, owner: "globex")
        #expect(globexRuns, "globex may start at once")
        var taken: [Int] = []
        while let next = queue.take() { taken.append(next.item) }
        #expect(taken == [1, 10, 2], "acme, then globex's turn, then acme up to its two")
        #expect(queue.count == 2)
        #expect(!queue.mayRun("acme"))
        let acmeRuns = queue.append(5, owner: "acme")
        #expect(!acmeRuns, "acme is at its share")

        queue.finished(owner: "acme")
        let third = queue.take()?.item
        #expect(third == 3, "an owner's items keep their order")
        #expect(queue.take() == nil, "acme is at its share again")
    }

    /// A tenant's plan (`db_share`) gives it its own cap; the others keep the common one.
    @Test func anOwnersPlanGivesItItsOwnShare() {
        var queue = FairQueue<Int>(maxRunningPerOwner: 1, limitOf: { $0 == "gold" ? 3 : nil })
        for item in 1...4 { queue.append(item, owner: "gold") }
        for item in 10...11 { queue.append(item, owner: "basic") }
        var taken: [Int] = []
        while let next = queue.take() { taken.append(next.item) }
        #expect(taken == [1, 10, 2, 3], "gold runs three at once, basic one")
        #expect(queue.limit(of: "gold") == 3 && queue.limit(of: "basic") == 1)
    }

    @Test func ownersWithWorkWaitingAreServedInTurn() {
        var queue = FairQueue<String>(maxRunningPerOwner: 100)
        for index in 0..<3 { queue.append("a\(index)", owner: "a") }
        for index in 0..<3 { queue.append("b\(index)", owner: "b") }
        queue.append("c0", owner: "c")
        var taken: [String] = []
        while let next = queue.take() { taken.append(next.item) }
        #expect(taken == ["a0", "b0", "c0", "a1", "b1", "a2", "b2"])
        #expect(queue.isEmpty && !queue.hasRunnable)
    }

    @Test func workWithoutAnOwnerHasNoCap() {
        var queue = FairQueue<Int>(maxRunningPerOwner: 1)
        for item in 0..<5 {
            let runs = queue.append(item, owner: nil)
            #expect(runs)
        }
        var taken = 0
        while queue.take() != nil { taken += 1 }
        #expect(taken == 5)
        #expect(queue.runningCount(of: nil) == 5)
        for _ in 0..<5 { queue.finished(owner: nil) }
        #expect(queue.runningCount(of: nil) == 0)
    }

    /// The pool itself: with four connections and a share of a half, a tenant whose two
    /// jobs are stuck gets no third connection, and another tenant's job runs at once.
    @Test func aPoolGivesAStuckTenantItsShareAndTheOtherTenantTheRest() async throws {
        let pool = BlockingPool<BlockingPoolTests.Connection>(
            name: "test", size: 4, logger: Logger(label: "test"), ownerShare: 0.5
        ) { BlockingPoolTests.Connection() }
        let gate = DispatchSemaphore(value: 0)
        let started = AsyncStream<Void>.makeStream()
        let stuck = (0..<5).map { _ in
            Task {
                try await PoolShare.$owner.withValue("acme") {
                    try await pool.withConnection { _ in
                        started.continuation.yield(); gate.wait()
                    }
                }
            }
        }
        var iterator = started.stream.makeAsyncIterator()
        await iterator.next()
        await iterator.next()
        while pool.state.withLock({ $0.waiting }) < 3 { await Task.yield() }
        #expect(pool.usage.busy == 2, "acme's share of four")

        let answer = try await PoolShare.$owner.withValue("globex") { try await pool.withConnection { _ in 7 } }
        #expect(answer == 7)
        #expect(pool.usage.busy == 2)

        for _ in 0..<5 { gate.signal() }
        for job in stuck { try await job.value }
        #expect(pool.state.withLock { $0.waiting } == 0)
        await pool.shutdown()
    }
}
