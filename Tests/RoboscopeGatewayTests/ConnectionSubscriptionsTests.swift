@testable import RoboscopeGateway
import RoboscopeDomain
import Testing
import TestInstants

@Suite struct ConnectionSubscriptionsTests {
    let a = Topic(.workSession, EntityID("0b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)
    let b = Topic(.space, EntityID("1b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)
    let c = Topic(.space, EntityID("2b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)

    /// Asks for `topic`; the grant the tailer would be handed (the test fails on a refusal).
    func ask(_ subscriptions: Box<ConnectionSubscriptions>, _ topic: Topic) throws -> PendingGrant {
        try subscriptions.mutate { $0.requested(topic) }.get()
    }

    func refusal(_ subscriptions: Box<ConnectionSubscriptions>, _ topic: Topic) -> DomainError? {
        if case .failure(let error) = subscriptions.mutate({ $0.requested(topic) }) { return error }
        return nil
    }

    @Test func aSubscriptionIsPendingUntilGrantedAndCannotBeAskedTwice() throws {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        let grant = try ask(subscriptions, a)
        #expect(refusal(subscriptions, a)?.code == .alreadySubscribed, "twice while pending")
        #expect(subscriptions.mutate { $0.settled(grant, granted: true, connectionOpen: true) } == .answer)
        #expect(subscriptions.value.active == [a])
        #expect(refusal(subscriptions, a)?.code == .alreadySubscribed, "twice once active")
    }

    @Test func pendingOnesCountAgainstTheLimit() throws {
        let subscriptions = Box(ConnectionSubscriptions(limit: 2))
        let grant = try ask(subscriptions, a)
        _ = subscriptions.mutate { $0.settled(grant, granted: true, connectionOpen: true) }
        _ = try ask(subscriptions, b)
        let refused = refusal(subscriptions, c)
        #expect(refused?.code == .tooManySubscriptions)
        #expect(refused?.field == "topic")
    }

    @Test func aRefusalAnswersWithoutActivating() throws {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        let grant = try ask(subscriptions, a)
        #expect(subscriptions.mutate { $0.settled(grant, granted: false, connectionOpen: true) } == .answer)
        #expect(subscriptions.value.active.isEmpty)
        #expect(subscriptions.value.pending.isEmpty)
        #expect(refusal(subscriptions, a) == nil, "it may be asked again")
    }

    @Test func unsubscribingWhilePendingWithdrawsTheGrantAndDiscardsItsAnswer() throws {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        let grant = try ask(subscriptions, a)
        #expect(subscriptions.mutate { $0.unsubscribed(a) } == .cancelled)
        #expect(grant.isWithdrawn, "the tailer skips it")
        #expect(subscriptions.mutate { $0.settled(grant, granted: true, connectionOpen: true) } == .discard)
        #expect(subscriptions.value.active.isEmpty)
    }

    @Test func aWithdrawnGrantsLateAnswerDoesNotSettleTheSameTopicAskedAgain() throws {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        let first = try ask(subscriptions, a)
        _ = subscriptions.mutate { $0.unsubscribed(a) }
        let second = try ask(subscriptions, a)
        #expect(subscriptions.mutate { $0.settled(first, granted: true, connectionOpen: true) } == .discard)
        #expect(subscriptions.value.pending[a] === second)
        #expect(subscriptions.mutate { $0.settled(second, granted: true, connectionOpen: true) } == .answer)
        #expect(subscriptions.value.active == [a])
    }

    @Test func churnIsBoundedByGrantsInFlightWithdrawnOnesIncluded() throws {
        let subscriptions = Box(ConnectionSubscriptions(limit: 100, inFlightLimit: 3))
        var asked: [PendingGrant] = []
        // Subscribe and unsubscribe at once, as a burst in one write would.
        for topic in [a, b, c] {
            asked.append(try ask(subscriptions, topic))
            _ = subscriptions.mutate { $0.unsubscribed(topic) }
        }
        #expect(subscriptions.value.inFlight == 3)
        let refused = refusal(subscriptions, a)
        #expect(refused?.code == .rateLimited, "the tailer has not answered the withdrawn ones yet")
        #expect(refused?.details["retry_after"] == .integer(1))
        // Each answer, discarded, frees a place.
        #expect(subscriptions.mutate { $0.settled(asked[0], granted: false, connectionOpen: true) } == .discard)
        #expect(refusal(subscriptions, a) == nil)
    }

    @Test func anAnswerToAClosedConnectionIsDiscarded() throws {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        let grant = try ask(subscriptions, a)
        #expect(subscriptions.mutate { $0.settled(grant, granted: true, connectionOpen: false) } == .discard)
    }

    @Test func unsubscribingUnlinksOnlyWhatIsActive() throws {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        #expect(subscriptions.mutate { $0.unsubscribed(a) } == .notSubscribed)
        let grant = try ask(subscriptions, a)
        _ = subscriptions.mutate { $0.settled(grant, granted: true, connectionOpen: true) }
        #expect(subscriptions.mutate { $0.unsubscribed(a) } == .unlink)
        #expect(subscriptions.mutate { $0.unsubscribed(a) } == .notSubscribed)
    }

    @Test func closingReturnsTheActiveTopicsAndWithdrawsThePendingOnes() throws {
        let subscriptions = Box(ConnectionSubscriptions(limit: 5))
        let first = try ask(subscriptions, a)
        _ = subscriptions.mutate { $0.settled(first, granted: true, connectionOpen: true) }
        let pending = try ask(subscriptions, b)
        #expect(subscriptions.mutate { $0.closed() } == [a])
        #expect(pending.isWithdrawn)
        #expect(subscriptions.mutate { $0.settled(pending, granted: true, connectionOpen: true) } == .discard)
    }
}
