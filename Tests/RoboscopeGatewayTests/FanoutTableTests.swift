@testable import RoboscopeGateway
import RoboscopeDomain
import Testing

@Suite struct FanoutTableTests {
    final class Receiver {
        let name: String
        init(_ name: String) { self.name = name }
    }

    let topic = Topic(.workSession, EntityID("0b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)
    let other = Topic(.space, EntityID("1b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)
    let event = SharedFrame(text: Array("event".utf8))

    func text(_ frame: SharedFrame) -> String {
        frame.payload.map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// What each receiver got of `item`: "send:<payload>" or "hold:<payload>", by name.
    func routed(_ table: FanoutTable<Receiver>, _ item: LiveItem) -> [String: String] {
        var got: [String: String] = [:]
        table.route(item) { receiver, delivery in
            switch delivery {
            case .send(let frame): got[receiver.name] = "send:\(text(frame))"
            case .hold(let frame): got[receiver.name] = "hold:\(text(frame))"
            }
        }
        return got
    }

    @Test func anEventGoesToTheTopicsSubscribersExceptThoseThatHaveItAlready() {
        var table = FanoutTable<Receiver>()
        table.add(1, Receiver("live"), to: topic, covered: nil, presenceChanges: false, catchingUp: false)
        table.add(2, Receiver("ahead"), to: topic, covered: 500, presenceChanges: false, catchingUp: false)
        table.add(3, Receiver("elsewhere"), to: other, covered: nil, presenceChanges: false, catchingUp: false)
        #expect(routed(table, LiveItem(topic: topic, position: 500, frame: event)) == ["live": "send:event"])
        #expect(
            routed(table, LiveItem(topic: topic, position: 501, frame: event)) == [
                "live": "send:event", "ahead": "send:event",
            ])
    }

    @Test func aSubscriberCatchingUpHoldsItsFramesUntilItHasCaughtUp() {
        var table = FanoutTable<Receiver>()
        table.add(1, Receiver("catching up"), to: topic, covered: 10, presenceChanges: false, catchingUp: true)
        let item = LiveItem(topic: topic, position: 700, frame: event)
        #expect(routed(table, item) == ["catching up": "hold:event"])
        table.caughtUp(1, on: topic)
        #expect(routed(table, item) == ["catching up": "send:event"])
    }

    @Test func presenceGoesAsTheWholeListOrAsItsChangesAsEachAsked() {
        var table = FanoutTable<Receiver>()
        table.add(1, Receiver("list"), to: topic, covered: 900, presenceChanges: false, catchingUp: false)
        table.add(2, Receiver("changes"), to: topic, covered: nil, presenceChanges: true, catchingUp: false)
        let delta = SharedFrame(text: Array("joined".utf8))
        // Presence has no position: a subscriber's `since` does not hide it.
        #expect(
            routed(table, LiveItem(topic: topic, position: nil, frame: event, presenceDelta: delta, isPresence: true))
                == ["list": "send:event", "changes": "send:joined"])
        #expect(
            routed(table, LiveItem(topic: topic, position: nil, frame: event, presenceDelta: nil, isPresence: true))
                == ["list": "send:event"], "changes that cancel out send nothing to those who want changes")
    }

    @Test func aRemovedSubscriberGetsNothingAndAnEmptyTopicGoes() {
        var table = FanoutTable<Receiver>()
        table.add(1, Receiver("a"), to: topic, covered: nil, presenceChanges: false, catchingUp: false)
        table.add(2, Receiver("b"), to: topic, covered: nil, presenceChanges: false, catchingUp: false)
        table.remove(1, from: topic)
        #expect(!table.contains(1, on: topic))
        #expect(routed(table, LiveItem(topic: topic, position: 1, frame: event)) == ["b": "send:event"])
        table.remove(2, from: topic)
        #expect(routed(table, LiveItem(topic: topic, position: 1, frame: event)).isEmpty)
    }
}
