@testable import RoboscopeGateway
import Testing

/// `--log-refusals-per-second`: the first lines of each second, then one count of the rest.
@Suite struct LogAllowanceTests {
    let t0 = ContinuousClock.now

    @Test func theFirstLinesOfASecondAreWrittenAndTheRestCountedWhenItEnds() {
        var allowance = LogAllowance<ContinuousClock.Instant>(perSecond: 3)
        var written = 0
        for step in 0..<10 {
            let (write, leftOut) = allowance.take(now: t0 + .milliseconds(step * 10))
            if write { written += 1 }
            #expect(leftOut == nil)
        }
        #expect(written == 3)
        // A tick inside the second says nothing; the first one after it says 7, once.
        #expect(allowance.tick(now: t0 + .milliseconds(900)) == nil)
        #expect(allowance.tick(now: t0 + .milliseconds(1001)) == 7)
        #expect(allowance.tick(now: t0 + .milliseconds(2500)) == nil)
    }

    @Test func theCountComesWithTheNextLineWhenNoTickCameBetween() {
        var allowance = LogAllowance<ContinuousClock.Instant>(perSecond: 1)
        #expect(allowance.take(now: t0) == (true, nil))
        #expect(allowance.take(now: t0 + .milliseconds(5)) == (false, nil))
        #expect(allowance.take(now: t0 + .milliseconds(6)) == (false, nil))
        let next = allowance.take(now: t0 + .seconds(3))
        #expect(next == (true, 2))
    }

    @Test func aQuietSecondCountsNothing() {
        var allowance = LogAllowance<ContinuousClock.Instant>(perSecond: 5)
        #expect(allowance.take(now: t0).write)
        #expect(allowance.tick(now: t0 + .seconds(2)) == nil)
    }
}
