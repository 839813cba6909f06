@testable import RoboscopeGateway
import Testing

/// A shard ticks only the connections whose deadline has come: each once, earliest
/// deadline kept, stale and removed entries dropped.
@Suite struct TickScheduleTests {
    @Test func dueConnectionsComeOnceAndOnlyWhenDue() {
        var schedule = TickSchedule<Int>()
        schedule.schedule(1, at: 30)
        schedule.schedule(2, at: 10)
        schedule.schedule(3, at: 20)
        #expect(schedule.popDue(now: 5).isEmpty)
        #expect(schedule.popDue(now: 20) == [2, 3])
        #expect(schedule.popDue(now: 20).isEmpty, "popped ones are unscheduled until scheduled again")
        #expect(schedule.count == 1)
        #expect(schedule.popDue(now: 100) == [1])
    }

    @Test func aLaterDeadlineWaitsForTheEarlierAndAnEarlierOneReplacesIt() {
        var schedule = TickSchedule<Int>()
        schedule.schedule(1, at: 30)
        // Heard from: the deadline moved later; the earlier entry comes first anyway.
        schedule.schedule(1, at: 60)
        #expect(schedule.popDue(now: 30) == [1])
        // A close moved it earlier: the earlier entry wins, the later one is stale.
        schedule.schedule(2, at: 50)
        schedule.schedule(2, at: 40)
        #expect(schedule.popDue(now: 45) == [2])
        #expect(schedule.popDue(now: 55).isEmpty, "the replaced entry at 50 is dropped")
    }

    @Test func aRemovedOrClosedConnectionIsNeverDue() {
        var schedule = TickSchedule<Int>()
        schedule.schedule(1, at: 10)
        schedule.schedule(2, at: 10)
        schedule.remove(1)
        schedule.schedule(2, at: nil)
        #expect(schedule.popDue(now: 100).isEmpty)
        #expect(schedule.count == 0)
    }
}
