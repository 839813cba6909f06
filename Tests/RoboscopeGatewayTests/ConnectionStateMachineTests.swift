@testable import RoboscopeGateway
import Testing
import TestInstants

@Suite struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine<TestInstant>
    let t0 = TestInstant.zero

    func machine() -> Box<Machine> { Box(Machine(now: t0, pingInterval: .seconds(20), maxBufferedBytes: 1000)) }

    func opened() -> Box<Machine> {
        let machine = machine()
        machine.value.upgraded(now: t0)
        return machine
    }

    @Test func anUpgradeThatNeverCompletesIsCutAfterTenSeconds() {
        let machine = machine()
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(10)) } == .none)
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(10) + .milliseconds(1)) } == .terminate)
    }

    @Test func anUpgradeWithoutATokenHasTenSecondsForItsAuthOp() {
        let machine = machine()
        machine.value.upgraded(now: t0, awaitingToken: true)
        #expect(!machine.value.isAuthenticated)
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(10)) } == .none)
        #expect(
            machine.mutate { $0.tick(now: t0 + .seconds(10) + .milliseconds(1)) }
                == .unauthorized(.missingToken, "no auth op within 10 s of the upgrade"))
    }

    @Test func anAuthOpInTimeLiftsTheDeadline() {
        let machine = machine()
        machine.value.upgraded(now: t0, awaitingToken: true)
        machine.value.authenticated(validUntil: t0 + .seconds(300))
        #expect(machine.value.isAuthenticated)
        machine.value.heard(now: t0 + .seconds(15))
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(15)) } == .none)
    }

    @Test func aTokenThatExpiresClosesTheConnectionAtItsInstant() {
        let machine = machine()
        machine.value.upgraded(now: t0, validUntil: t0 + .seconds(5))
        #expect(machine.value.isAuthenticated)
        machine.value.heard(now: t0 + .seconds(4))
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(4)) } == .none)
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(5)) } == .unauthorized(.expired, "token expired"))
    }

    @Test func aRefreshMovesTheExpiry() {
        let machine = machine()
        machine.value.upgraded(now: t0, validUntil: t0 + .seconds(5))
        machine.value.authenticated(validUntil: t0 + .seconds(50))
        machine.value.heard(now: t0 + .seconds(6))
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(6)) } == .none)
        machine.value.heard(now: t0 + .seconds(50))
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(50)) } == .unauthorized(.expired, "token expired"))
    }

    @Test func aTokenWithoutExpiryHoldsForGood() {
        let machine = machine()
        machine.value.upgraded(now: t0)
        machine.value.heard(now: t0 + .seconds(3600))
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(3600)) } == .none)
    }

    @Test func expiryIsNotCheckedOnceClosing() {
        let machine = machine()
        machine.value.upgraded(now: t0, validUntil: t0 + .seconds(1))
        #expect(machine.mutate { $0.closeRequested(now: t0) } == .sendClose)
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(1)) } == .none)
    }

    @Test func silencePingsOnceThenEndsTheConnection() {
        let machine = opened()
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(20)) } == .none)
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(21)) } == .ping)
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(30)) } == .none, "one ping per silence")
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(41) + .milliseconds(1)) } == .terminate)
    }

    @Test func anyBytesAnswerThePing() {
        let machine = opened()
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(21)) } == .ping)
        machine.value.heard(now: t0 + .seconds(25))
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(45)) } == .none)
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(46)) } == .ping)
    }

    @Test func thePeersCloseIsEchoedAndTheEchoEndsAtItsDeadline() {
        let machine = opened()
        #expect(machine.mutate { $0.peerClosed(now: t0, outboundEmpty: true) } == .echo)
        #expect(!machine.value.isOpen)
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(2)) } == .none)
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(3)) } == .terminate)
    }

    @Test func ourCloseWaitsForThePeersAnswer() {
        let machine = opened()
        #expect(machine.mutate { $0.closeRequested(now: t0) } == .sendClose)
        #expect(machine.mutate { $0.closeRequested(now: t0) } == .none, "a second close does nothing")
        #expect(
            machine.mutate { $0.peerClosed(now: t0, outboundEmpty: false) } == .ignore,
            "our close frame is still queued")
        #expect(machine.mutate { $0.peerClosed(now: t0, outboundEmpty: true) } == .terminate)
    }

    @Test func closingBeforeTheUpgradeTerminates() {
        let machine = machine()
        #expect(machine.mutate { $0.closeRequested(now: t0) } == .terminate)
        #expect(machine.mutate { $0.peerClosed(now: t0, outboundEmpty: true) } == .ignore)
    }

    @Test func aRefusedUpgradeHasTwoSecondsToBeRead() {
        let machine = machine()
        machine.value.refused(now: t0)
        #expect(machine.value.state == .closing(deadline: t0 + .seconds(2)))
        machine.value.upgraded(now: t0)
        #expect(!machine.value.isOpen, "a refused upgrade never opens")
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(3)) } == .terminate)
    }

    @Test func aQueueOverTheBoundIsASlowReader() {
        // Catch-ups count like anything else: they are paged as the socket drains
        // (ConnectionCatchUpsTests), so they need no allowance on top of the bound.
        let machine = opened()
        #expect(!machine.mutate { $0.flushed(queuedBytes: 1000) })
        #expect(machine.mutate { $0.flushed(queuedBytes: 1001) })
    }

    @Test func aClosingConnectionIsNeverSlow() {
        let machine = opened()
        _ = machine.value.closeRequested(now: t0)
        #expect(!machine.mutate { $0.flushed(queuedBytes: 10_000) })
    }

    @Test func terminatingTwiceIsANoOp() {
        let machine = opened()
        #expect(machine.mutate { $0.terminated() })
        #expect(!machine.mutate { $0.terminated() })
        #expect(machine.mutate { $0.tick(now: t0 + .seconds(100)) } == .none)
    }
    /// The shard ticks a connection only at its `nextDeadline` (`TickSchedule`): over a
    /// seeded walk of everything that can happen to a connection, a tick before the
    /// deadline never acts, and one just after it does.
    @Test func nextDeadlineIsTheFirstInstantATickCanAct() {
        var random = SeededGenerator(seed: 51)
        for _ in 0..<200 {
            let machine = machine()
            var now = t0
            for _ in 0..<12 {
                now = now + .milliseconds(Int64.random(in: 0...15_000, using: &random))
                switch Int.random(in: 0..<8, using: &random) {
                case 0: machine.value.upgraded(now: now, awaitingToken: Bool.random(using: &random))
                case 1:
                    machine.value.upgraded(
                        now: now, validUntil: now + .seconds(Int64.random(in: 1...40, using: &random)))
                case 2: machine.value.heard(now: now)
                case 3: machine.value.authenticated(validUntil: Bool.random(using: &random) ? nil : now + .seconds(7))
                case 4: _ = machine.value.closeRequested(now: now)
                case 5: _ = machine.value.peerClosed(now: now, outboundEmpty: false)
                default: _ = machine.value.tick(now: now)
                }
                guard let deadline = machine.value.nextDeadline else {
                    #expect(machine.value.isClosed)
                    break
                }
                if now < deadline {
                    var early = machine.value
                    #expect(
                        early.tick(now: deadline + .milliseconds(-1)) == .none, "before \(deadline): \(early.state)")
                }
                var late = machine.value
                #expect(
                    late.tick(now: max(now, deadline) + .milliseconds(1)) != .none, "after \(deadline): \(late.state)")
            }
        }
    }
}

/// xorshift64*: the same walk on every run.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed | 1 }
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }
}
