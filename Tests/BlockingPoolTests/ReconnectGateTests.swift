@testable import BlockingPool
import Testing
import TestInstants

@Suite struct ReconnectGateTests {
    struct Refused: Error, Equatable { var attempt: Int }
    let t0 = TestInstant.zero

    @Test func anOpenGateLetsEveryThreadTry() {
        let gate = Box(ReconnectGate<TestInstant>(retryInterval: .milliseconds(500)))
        #expect(gate.value.failFast(now: t0) == nil)
    }

    @Test func aFailureShutsTheGateForTheRetryIntervalThenOneAttemptGoesThrough() {
        let gate = Box(ReconnectGate<TestInstant>(retryInterval: .milliseconds(500)))
        #expect(gate.mutate { $0.failed(Refused(attempt: 1), now: t0) }, "the first failure starts an outage")
        #expect(gate.value.failFast(now: t0 + .milliseconds(499)) as? Refused == Refused(attempt: 1))
        #expect(gate.value.failFast(now: t0 + .milliseconds(500)) == nil)
        #expect(!gate.mutate { $0.failed(Refused(attempt: 2), now: t0 + .milliseconds(500)) }, "still the same outage")
        #expect(
            gate.value.failFast(now: t0 + .milliseconds(900)) as? Refused == Refused(attempt: 2),
            "jobs fail fast with the newest failure, from its own time")
    }

    @Test func aSuccessEndsTheOutageOnce() {
        let gate = Box(ReconnectGate<TestInstant>(retryInterval: .milliseconds(500)))
        #expect(!gate.mutate { $0.connected() }, "no outage to end")
        _ = gate.value.failed(Refused(attempt: 1), now: t0)
        #expect(gate.mutate { $0.connected() })
        #expect(gate.value.failFast(now: t0) == nil)
        #expect(!gate.mutate { $0.connected() })
    }

    @Test func aConnectionIsPingedOnlyAfterSittingIdle() {
        let idle = Duration.seconds(2)
        #expect(
            ConnectionCheck.before(broken: false, lastUsed: t0, now: t0 + .seconds(2), idleCheckInterval: idle) == .use)
        #expect(
            ConnectionCheck.before(broken: false, lastUsed: t0, now: t0 + .seconds(3), idleCheckInterval: idle) == .ping
        )
        #expect(ConnectionCheck.before(broken: true, lastUsed: t0, now: t0, idleCheckInterval: idle) == .replace)
    }
}

@Suite struct BackoffTests {
    @Test func doublesUpToItsMaximumAndStartsOverAfterASuccess() {
        var backoff = Backoff(initial: .milliseconds(100), maximum: .milliseconds(500))
        var waits: [Duration] = []
        for _ in 0..<5 { waits.append(backoff.failed()) }
        #expect(
            waits == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(500), .milliseconds(500),
            ])
        backoff.succeeded()
        #expect(backoff.failed() == .milliseconds(100))
        #expect(Duration.milliseconds(1500).milliseconds == 1500)
    }
}
