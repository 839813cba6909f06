import Testing
@testable import RoboscopeGateway
import TestInstants

/// The acceptor at the descriptor ceiling (issue 45): it disarms instead of spinning, backs
/// off while descriptors lack, and says so at most once a second.
@Suite struct AcceptGateTests {
    @Test func atTheCeilingItStopsAndListensAgainOnceAConnectionHasGone() {
        let gate = Box(AcceptGate<TestInstant>(ceiling: 3))
        #expect(gate.mutate { $0.mayAccept(open: 2) })
        #expect(!gate.mutate { $0.mayAccept(open: 3) }, "full")
        #expect(gate.value.state == .full)
        #expect(!gate.mutate { $0.mayAccept(open: 0) }, "disarmed until a tick sees room")
        #expect(!gate.mutate { $0.tick(now: .zero, open: 3) })
        #expect(gate.mutate { $0.tick(now: .zero, open: 2) }, "armed again")
        #expect(gate.mutate { $0.mayAccept(open: 2) })
    }

    @Test func outOfDescriptorsItBacksOffDoublingAndResetsOnSuccess() {
        let gate = Box(AcceptGate<TestInstant>(ceiling: 100))
        gate.value.outOfDescriptors(now: .zero)
        #expect(gate.value.state == .backingOff(until: .zero + .milliseconds(100)))
        #expect(!gate.mutate { $0.tick(now: .zero + .milliseconds(99), open: 0) })
        #expect(gate.mutate { $0.tick(now: .zero + .milliseconds(100), open: 0) })
        var now = TestInstant.zero + .milliseconds(100)
        for expected in [200, 400, 800, 1600, 2000, 2000] {
            gate.value.outOfDescriptors(now: now)
            #expect(gate.value.state == .backingOff(until: now + .milliseconds(Int64(expected))))
            now = now + .milliseconds(Int64(expected))
            #expect(gate.mutate { $0.tick(now: now, open: 0) })
        }
        gate.value.accepted()
        gate.value.outOfDescriptors(now: now)
        #expect(gate.value.state == .backingOff(until: now + .milliseconds(100)), "a success starts the backoff afresh")
    }

    @Test func itLogsAtMostOnceASecondCountingWhatItLeftOut() {
        let gate = Box(AcceptGate<TestInstant>(ceiling: 1))
        #expect(gate.mutate { $0.log(now: .zero) } == (true, 0))
        for step in 1...9 {
            #expect(gate.mutate { $0.log(now: .zero + .milliseconds(Int64(step * 100))).log } == false)
        }
        #expect(gate.mutate { $0.log(now: .zero + .seconds(1)) } == (true, 9))
        #expect(gate.mutate { $0.log(now: .zero + .seconds(3)) } == (true, 0))
    }
}
