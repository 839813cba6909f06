@testable import RoboscopeGateway
import RoboscopeDomain
import Testing

@Suite struct ConnectionSubscriptionsTests {
    let a = Topic(.workSession, EntityID("0b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)
    let b = Topic(.space, EntityID("1b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)
    let c = Topic(.space, EntityID("2b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)

    @Test func aSubscriptionIsPendingUntilGrantedAndCannotBeAskedTwice() {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        #expect(subscriptions.mutate { $0.requested(a) } == nil)
        #expect(subscriptions.mutate { $0.requested(a) }?.code == .alreadySubscribed, "twice while pending")
        #expect(subscriptions.mutate { $0.settled(a, granted: true, connectionOpen: true) } == .answer)
        #expect(subscriptions.value.active == [a])
        #expect(subscriptions.mutate { $0.requested(a) }?.code == .alreadySubscribed, "twice once active")
    }

    @Test func pendingOnesCountAgainstTheLimit() {
        let subscriptions = Box(ConnectionSubscriptions(limit: 2))
        #expect(subscriptions.mutate { $0.requested(a) } == nil)
        _ = subscriptions.mutate { $0.settled(a, granted: true, connectionOpen: true) }
        #expect(subscriptions.mutate { $0.requested(b) } == nil)
        let refusal = subscriptions.mutate { $0.requested(c) }
        #expect(refusal?.code == .tooManySubscriptions)
        #expect(refusal?.field == "topic")
    }

    @Test func aRefusalAnswersWithoutActivating() {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        _ = subscriptions.mutate { $0.requested(a) }
        #expect(subscriptions.mutate { $0.settled(a, granted: false, connectionOpen: true) } == .answer)
        #expect(subscriptions.value.active.isEmpty)
        #expect(subscriptions.value.pending.isEmpty)
        #expect(subscriptions.mutate { $0.requested(a) } == nil, "it may be asked again")
    }

    @Test func unsubscribingWhilePendingDiscardsTheGrantThatFollows() {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        _ = subscriptions.mutate { $0.requested(a) }
        #expect(subscriptions.mutate { $0.unsubscribed(a) } == .cancelled)
        #expect(subscriptions.mutate { $0.settled(a, granted: true, connectionOpen: true) } == .discard)
        #expect(subscriptions.value.active.isEmpty)
    }

    @Test func anAnswerToAClosedConnectionIsDiscarded() {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        _ = subscriptions.mutate { $0.requested(a) }
        #expect(subscriptions.mutate { $0.settled(a, granted: true, connectionOpen: false) } == .discard)
    }

    @Test func unsubscribingUnlinksOnlyWhatIsActive() {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        #expect(subscriptions.mutate { $0.unsubscribed(a) } == .notSubscribed)
        _ = subscriptions.mutate { $0.requested(a) }
        _ = subscriptions.mutate { $0.settled(a, granted: true, connectionOpen: true) }
        #expect(subscriptions.mutate { $0.unsubscribed(a) } == .unlink)
        #expect(subscriptions.mutate { $0.unsubscribed(a) } == .notSubscribed)
    }

    @Test func closingReturnsTheActiveTopicsAndForgetsThePendingOnes() {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        _ = subscriptions.mutate { $0.requested(a) }
        _ = subscriptions.mutate { $0.settled(a, granted: true, connectionOpen: true) }
        _ = subscriptions.mutate { $0.requested(b) }
        #expect(subscriptions.mutate { $0.closed() } == [a])
        #expect(subscriptions.mutate { $0.settled(b, granted: true, connectionOpen: true) } == .discard)
    }
}
