@testable import RoboscopeGateway
import RoboscopePostgres
import Testing
import TestInstants

@Suite struct LiveSequenceTests {
    func at(_ transaction: UInt64, _ position: Int64) -> LogCursor {
        LogCursor(transactionID: transaction, position: position)
    }

    @Test func nothingIsReadBeforeTheFirstHeadIsKnown() {
        let live = LiveSequence(batchSize: 500)
        #expect(live.next(anyoneSubscribed: true) == .wait)
    }

    @Test func aReconnectKeepsTheCursorItHad() {
        let live = Box(LiveSequence(batchSize: 500))
        live.value.connected(head: at(10, 100))
        _ = live.mutate { $0.delivered(count: 3, last: at(11, 103)) }
        live.value.connected(head: at(20, 200))
        #expect(live.value.cursor == at(11, 103), "events 104-200 are still to be delivered")
    }

    @Test func aFullBatchIsFollowedByAnotherReadAndAShortOneByWaiting() {
        let live = Box(LiveSequence(batchSize: 2, cursor: at(1, 1)))
        #expect(live.value.next(anyoneSubscribed: true) == .read(after: at(1, 1)))
        #expect(live.mutate { $0.delivered(count: 2, last: at(2, 3)) } == .read(after: at(2, 3)))
        #expect(live.mutate { $0.delivered(count: 1, last: at(3, 4)) } == .wait)
        #expect(live.mutate { $0.delivered(count: 0, last: nil) } == .wait)
        #expect(live.value.cursor == at(3, 4))
    }

    @Test func withoutSubscribersTheCursorSkipsToTheHeadAndNeverBack() {
        let live = Box(LiveSequence(batchSize: 500, cursor: at(5, 50)))
        #expect(live.value.next(anyoneSubscribed: false) == .skipToHead)
        live.value.skipped(to: at(9, 90))
        #expect(live.value.cursor == at(9, 90))
        live.value.skipped(to: at(7, 95))
        #expect(live.value.cursor == at(9, 90), "delivery order is by transaction first")
    }

    @Test func theCursorNeverMovesBackwards() {
        let live = Box(LiveSequence(batchSize: 500, cursor: at(9, 90)))
        _ = live.mutate { $0.delivered(count: 1, last: at(8, 91)) }
        #expect(live.value.cursor == at(9, 90))
    }
}
