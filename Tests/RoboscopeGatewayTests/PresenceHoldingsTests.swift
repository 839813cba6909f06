@testable import RoboscopeGateway
import RoboscopeDomain
import Testing
import TestInstants

@Suite struct PresenceHoldingsTests {
    typealias Holdings = PresenceHoldings<TestInstant>
    let alice = PresenceKey(workSessionID: EntityID("0b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!, user: "alice")
    let bob = PresenceKey(workSessionID: EntityID("0b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!, user: "bob")
    let t0 = TestInstant.zero

    func holdings() -> Box<Holdings> { Box(Holdings(window: .seconds(30), grace: .seconds(5))) }

    @Test func aHoldBeatsAtOnceThenEveryThirdOfTheWindow() {
        let holdings = holdings()
        #expect(holdings.mutate { $0.held(alice) } == .heartbeat(alice))
        holdings.value.beaten(alice, redisTime: 100, now: t0)
        #expect(holdings.value.due(now: t0 + .seconds(9)).isEmpty)
        #expect(holdings.value.due(now: t0 + .seconds(10)) == [.heartbeat(alice)])
    }

    @Test func aHoldThatRedisNeverConfirmedIsBeatenAtTheNextChance() {
        let holdings = holdings()
        _ = holdings.value.held(alice)
        // Redis was down: no `beaten`. The next round beats it, whatever the time.
        #expect(holdings.value.due(now: t0) == [.heartbeat(alice)])
    }

    @Test func theLastReleaseLeavesAfterTheGraceWithTheLastBeatItSent() {
        let holdings = holdings()
        _ = holdings.value.held(alice)
        _ = holdings.value.held(alice)
        holdings.value.beaten(alice, redisTime: 100, now: t0)
        holdings.value.released(alice, now: t0 + .seconds(1))
        #expect(holdings.value.due(now: t0 + .seconds(7)).isEmpty, "one connection still holds alice")
        holdings.value.released(alice, now: t0 + .seconds(2))
        #expect(
            holdings.value.due(now: t0 + .seconds(6) + .milliseconds(999)).isEmpty,
            "inside the grace period: no beat, no leave")
        #expect(holdings.value.due(now: t0 + .seconds(7)) == [.leave(alice, ifLastSeenAtOrBefore: 100)])
        holdings.value.left(alice)
        #expect(holdings.value.holdings.isEmpty)
        #expect(holdings.value.due(now: t0 + .seconds(60)).isEmpty)
    }

    @Test func holdingAgainDuringTheGraceCancelsTheLeave() {
        let holdings = holdings()
        _ = holdings.value.held(alice)
        holdings.value.beaten(alice, redisTime: 100, now: t0)
        holdings.value.released(alice, now: t0)
        #expect(holdings.mutate { $0.held(alice) } == .heartbeat(alice))
        holdings.value.beaten(alice, redisTime: 200, now: t0 + .seconds(3))
        #expect(holdings.value.due(now: t0 + .seconds(6)).isEmpty)
        #expect(holdings.value.holdings[alice]?.connections == 1)
    }

    @Test func aLeaveCarriedOutAfterANewHoldKeepsTheHolding() {
        let holdings = holdings()
        _ = holdings.value.held(alice)
        holdings.value.released(alice, now: t0)
        let actions = holdings.value.due(now: t0 + .seconds(5))
        #expect(actions == [.leave(alice, ifLastSeenAtOrBefore: 0)])
        _ = holdings.value.held(alice)
        holdings.value.left(alice)
        #expect(holdings.value.holdings[alice]?.connections == 1)
    }

    @Test func moreReleasesThanHoldsNeverGoNegative() {
        let holdings = holdings()
        holdings.value.released(alice, now: t0)
        #expect(holdings.value.holdings.isEmpty, "a release of something never held is ignored")
        _ = holdings.value.held(alice)
        holdings.value.released(alice, now: t0)
        holdings.value.released(alice, now: t0 + .seconds(4))
        #expect(holdings.value.holdings[alice]?.connections == 0)
        #expect(
            holdings.value.due(now: t0 + .seconds(5)) == [.leave(alice, ifLastSeenAtOrBefore: 0)],
            "the grace period runs from the first release that reached zero")
    }

    @Test func shutdownLeavesEveryoneHeld() {
        let holdings = holdings()
        _ = holdings.value.held(alice)
        _ = holdings.value.held(bob)
        holdings.value.beaten(bob, redisTime: 42, now: t0)
        let leaves = holdings.value.leavingAll()
        #expect(leaves.count == 2)
        #expect(leaves.contains(.leave(bob, ifLastSeenAtOrBefore: 42)))
        #expect(leaves.contains(.leave(alice, ifLastSeenAtOrBefore: 0)))
    }

    @Test func anActionWhoseOutcomeNeverCameIsDueAgainAfterTheRetry() {
        let holdings = holdings()
        _ = holdings.value.held(alice)
        holdings.value.beaten(alice, redisTime: 1, now: t0)
        #expect(holdings.value.due(now: t0 + .seconds(10)) == [.heartbeat(alice)])
        #expect(holdings.value.due(now: t0 + .seconds(10) + .milliseconds(500)).isEmpty, "not again before the retry")
        #expect(holdings.value.due(now: t0 + .seconds(11)) == [.heartbeat(alice)], "Redis failed: due again")
        holdings.value.beaten(alice, redisTime: 2, now: t0 + .seconds(11))
        #expect(holdings.value.due(now: t0 + .seconds(20)).isEmpty, "the retry is stale once the beat succeeded")
        #expect(holdings.value.due(now: t0 + .seconds(21)) == [.heartbeat(alice)])
    }

    @Test func manyHoldingsComeDueEachAtItsOwnTime() {
        let holdings = holdings()
        let keys = (0..<1000).map { PresenceKey(workSessionID: alice.workSessionID, user: "u\($0)") }
        for (index, key) in keys.enumerated() {
            _ = holdings.value.held(key)
            holdings.value.beaten(key, redisTime: Int64(index), now: t0 + .milliseconds(index))
        }
        #expect(holdings.value.due(now: t0 + .seconds(9)).isEmpty)
        let due = holdings.value.due(now: t0 + .seconds(10) + .milliseconds(499))
        #expect(Set(due) == Set(keys.prefix(500).map { .heartbeat($0) }))
        for key in keys.prefix(500) {
            holdings.value.beaten(key, redisTime: 0, now: t0 + .seconds(10) + .milliseconds(499))
        }
        #expect(Set(holdings.value.due(now: t0 + .seconds(11))) == Set(keys.suffix(500).map { .heartbeat($0) }))
    }
}
