import Foundation
import Testing
import RoboscopeKit
import RoboscopeKitTesting

/// Presence kept alive and lock leases that extend themselves, on a clock the test moves.
@Suite struct KeepaliveTests {
    let service = InMemoryService()
    let clock = ManualClock()

    @Test func heartbeatsArePacedAndAnnouncedAgainWhenTheNetworkReturns() async throws {
        let session = UUID()
        let keeper = PresenceKeeper(
            client: makeClient(service, clock: clock), workSessionID: session, user: "ana",
            interval: .seconds(10))
        await keeper.start()
        await clock.waitForSleepers()
        #expect(await service.heartbeats.count == 1)
        #expect(await clock.requestedSleeps.last == .seconds(10))
        await clock.advance(by: .seconds(10))
        await clock.waitForSleepers()
        #expect(await service.heartbeats.count == 2)

        await service.setReachable(false)
        await clock.advance(by: .seconds(10))
        await clock.waitForSleepers()
        #expect(await keeper.isPresent == false)
        // Offline, the next try comes sooner than the pace.
        #expect(try #require(await clock.requestedSleeps.last) < .seconds(10))
        await service.setReachable(true)
        await clock.advanceToNextSleep()
        await clock.waitForSleepers()
        #expect(await service.heartbeats.count == 3)
        #expect(await keeper.isPresent)
        await keeper.stop()
        #expect(await service.leaves.map(\.user) == ["ana"])
    }

    @Test func aLeaseExtendsItselfBeforeItsTTL() async throws {
        let session = UUID()
        let lease = LockLease(client: makeClient(service, clock: clock), workSessionID: session, ttlSeconds: 30)
        #expect(try await lease.acquire())
        let fencing = try #require(await lease.fencingToken)
        await clock.waitForSleepers()
        #expect(await clock.requestedSleeps.last == .seconds(20), "extended two thirds into the TTL")
        for _ in 0..<3 {
            await clock.advanceToNextSleep()
            await clock.waitForSleepers()
        }
        let extensions = await service.requests.filter { $0.url.path.hasSuffix("/extend") }
        #expect(extensions.count == 3)
        guard case .held(let token, _) = await lease.state else {
            Issue.record("expected held")
            return
        }
        #expect(token == fencing)
        await lease.release()
        #expect(await service.lockHolder(session) == nil)
    }

    @Test func aLeaseReportsItsLossWhenTakenOver() async throws {
        let session = UUID()
        let lease = LockLease(client: makeClient(service, clock: clock), workSessionID: session, ttlSeconds: 30)
        #expect(try await lease.acquire())
        await clock.waitForSleepers()
        await service.takeOverLock(session)
        await clock.advanceToNextSleep()
        try await within {
            for await state in lease.states { if case .lost = state { return } }
        }
        #expect(await lease.token == nil)
    }

    @Test func aLeaseThatCannotExtendInTimeIsLost() async throws {
        let session = UUID()
        let lease = LockLease(client: makeClient(service, clock: clock), workSessionID: session, ttlSeconds: 30)
        #expect(try await lease.acquire())
        await service.setReachable(false)
        try await within(30) {
            while true {
                if case .lost(let reason) = await lease.state {
                    #expect(reason.contains("expired"))
                    return
                }
                // Each failed extension waits; move past it until the TTL has gone
                // (polling the lease's state, a millisecond apart).
                await clock.advanceToNextSleep()
                try await Task.sleep(for: .milliseconds(1))
            }
        }
    }

    @Test func aHeldLockIsNotAcquired() async throws {
        let session = UUID()
        await service.takeOverLock(session, holder: "lena")
        let lease = LockLease(client: makeClient(service, clock: clock), workSessionID: session)
        #expect(try await lease.acquire() == false)
        #expect(await lease.state == .lost(reason: "held by lena"))
    }
}
