@testable import RoboscopeGateway
import RoboscopeDomain
import RoboscopePostgres
import Testing
import TestInstants

@Suite struct ConnectionCatchUpsTests {
    let a = Topic(.workSession, EntityID("0b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)
    let b = Topic(.space, EntityID("1b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)
    let until = LogCursor(transactionID: 9, position: 900)

    func catchUps() -> Box<ConnectionCatchUps> {
        Box(ConnectionCatchUps(lowWater: 1000, pageBytes: 500))
    }

    func start(
        _ catchUps: Box<ConnectionCatchUps>, _ topic: Topic, after: Int64 = 0, through: Int64 = 300
    ) -> PendingGrant {
        let grant = PendingGrant(topic: topic)
        catchUps.value.start(
            topic, grant: grant, range: CatchUpRange(after: after, through: through, events: 10), until: until,
            head: TopicHead(position: through, topicSeq: 10))
        return grant
    }

    func frame(_ size: Int) -> SharedFrame {
        SharedFrame([UInt8](repeating: 0x20, count: size))
    }

    @Test func onePageIsAskedAtATimeAndOnlyWhileTheSocketHasRoom() {
        let catchUps = catchUps()
        let grant = start(catchUps, a)
        #expect(
            catchUps.mutate { $0.nextAsk(queuedBytes: 1000) } == nil, "the socket has a low-water mark's worth queued")
        let ask = catchUps.mutate { $0.nextAsk(queuedBytes: 999) }
        #expect(ask?.progress.after == 0)
        #expect(ask?.progress.until == until)
        #expect(ask?.maxBytes == 500)
        #expect(catchUps.mutate { $0.nextAsk(queuedBytes: 0) } == nil, "one page at a time")
        guard case .more = catchUps.mutate({ $0.arrived(grant, last: 120, onStandby: true) }) else {
            Issue.record("expected more"); return
        }
        let next = catchUps.mutate { $0.nextAsk(queuedBytes: 0) }
        #expect(next?.progress.after == 120, "the next page continues after the last event sent")
        #expect(next?.progress.onStandby == true, "where the first page was read")
    }

    @Test func aCatchUpWaitsForItsSocketOnlyWhenNoPageIsAskedAndTheSocketIsFull() {
        let catchUps = catchUps()
        #expect(!catchUps.value.waitsForSocket(queuedBytes: 5000), "no catch-up, nothing waits")
        let grant = start(catchUps, a)
        #expect(catchUps.value.waitsForSocket(queuedBytes: 1000))
        #expect(!catchUps.value.waitsForSocket(queuedBytes: 999), "room: the next page is asked instead")
        _ = catchUps.mutate { $0.nextAsk(queuedBytes: 0) }
        #expect(!catchUps.value.waitsForSocket(queuedBytes: 5000), "a page is being read")
        _ = catchUps.mutate { $0.arrived(grant, last: 120, onStandby: false) }
        #expect(catchUps.value.waitsForSocket(queuedBytes: 5000))
        catchUps.value.cancel(a)
        #expect(!catchUps.value.waitsForSocket(queuedBytes: 5000), "unsubscribed")
    }

    @Test func liveFramesAreHeldUntilTheCatchUpEndsAndCountUntilThen() {
        let catchUps = catchUps()
        let grant = start(catchUps, a)
        _ = catchUps.mutate { $0.nextAsk(queuedBytes: 0) }
        catchUps.value.hold(frame(30), for: a)
        catchUps.value.hold(frame(20), for: a)
        catchUps.value.hold(frame(99), for: b)
        #expect(catchUps.value.heldBytes == 50, "only topics catching up hold frames")
        guard case .completed(let held) = catchUps.mutate({ $0.arrived(grant, last: 300, onStandby: false) }) else {
            Issue.record("expected the catch-up to end at its head"); return
        }
        #expect(held.map(\.count) == [30, 20])
        #expect(catchUps.value.heldBytes == 0)
        #expect(catchUps.value.isEmpty)
    }

    @Test func anEmptyPageEndsTheCatchUp() {
        let catchUps = catchUps()
        let grant = start(catchUps, a)
        _ = catchUps.mutate { $0.nextAsk(queuedBytes: 0) }
        guard case .completed = catchUps.mutate({ $0.arrived(grant, last: nil, onStandby: false) }) else {
            Issue.record("expected completed"); return
        }
    }

    @Test func catchUpsGoOneAfterAnotherInTheOrderGranted() {
        let catchUps = catchUps()
        let first = start(catchUps, a)
        let second = start(catchUps, b, after: 50)
        #expect(catchUps.mutate { $0.nextAsk(queuedBytes: 0) }?.progress.topic == a)
        guard case .completed = catchUps.mutate({ $0.arrived(first, last: 300, onStandby: false) }) else {
            Issue.record("expected completed"); return
        }
        let next = catchUps.mutate { $0.nextAsk(queuedBytes: 0) }
        #expect(next?.progress.topic == b)
        #expect(next?.progress.grant === second)
    }

    @Test func aCancelledCatchUpIsWithdrawnItsPageIsStaleAndTheNextOneStarts() {
        let catchUps = catchUps()
        let first = start(catchUps, a)
        _ = start(catchUps, b)
        _ = catchUps.mutate { $0.nextAsk(queuedBytes: 0) }
        catchUps.value.hold(frame(40), for: a)
        catchUps.value.cancel(a)
        #expect(first.isWithdrawn, "the reader skips its page")
        #expect(catchUps.value.heldBytes == 0)
        #expect(
            catchUps.mutate { $0.nextAsk(queuedBytes: 0) }?.progress.topic == b,
            "no need to wait for the withdrawn page")
        guard case .stale = catchUps.mutate({ $0.arrived(first, last: 100, onStandby: false) }) else {
            Issue.record("expected stale"); return
        }
    }

    @Test func aCloseWithdrawsEveryCatchUp() {
        let catchUps = catchUps()
        let grants = [start(catchUps, a), start(catchUps, b)]
        catchUps.value.hold(frame(40), for: b)
        catchUps.value.cancelAll()
        #expect(grants.allSatisfy { $0.isWithdrawn })
        #expect(catchUps.value.isEmpty)
        #expect(catchUps.value.heldBytes == 0)
        #expect(catchUps.mutate { $0.nextAsk(queuedBytes: 0) } == nil)
    }
}
