@testable import RoboscopeGateway
import RoboscopeDomain
import RoboscopePostgres
import Testing
import TestInstants

@Suite struct SubscriptionGrantTests {
    let topic = Topic(.workSession, EntityID("0b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)
    let head = TopicHead(position: 500, topicSeq: 40)

    func grant(since: Int64?, limit: Int = 100) -> Box<SubscriptionGrant> {
        Box(SubscriptionGrant(topic: topic, since: since, head: head, maxCatchUpEvents: limit))
    }

    func granted(
        _ step: SubscriptionGrant.Step
    ) -> (position: Int64, topicSeq: Int64?, covered: Int64?, catchUp: CatchUpRange?)? {
        if case .grant(let position, let topicSeq, let covered, let catchUp) = step {
            return (position, topicSeq, covered, catchUp)
        }
        return nil
    }

    func refused(_ step: SubscriptionGrant.Step) -> DomainError? {
        if case .refuse(let error) = step { return error }
        return nil
    }

    @Test func withoutSinceTheTopicMustExist() {
        let grant = grant(since: nil)
        guard case .askExists = grant.value.start() else { Issue.record("expected askExists"); return }
        #expect(refused(grant.value.exists(false))?.code == .notFound)
        let answer = granted(grant.value.exists(true))
        #expect(answer?.position == 500)
        #expect(answer?.topicSeq == 40)
        #expect(answer?.covered == nil)
        #expect(answer?.catchUp == nil)
    }

    @Test func aCatchUpIsCountedFromTheTopicsSequenceAndHandedOnUnread() {
        let grant = grant(since: 100)
        guard case .askSequence(atOrBefore: 100) = grant.value.start() else {
            Issue.record("expected the sequence at 100"); return
        }
        let answer = granted(grant.value.sequence(atSince: 12))
        #expect(answer?.position == 500)
        #expect(answer?.topicSeq == 40)
        #expect(answer?.covered == 100)
        #expect(answer?.catchUp == CatchUpRange(after: 100, through: 500, events: 28))
    }

    @Test func sinceBeforeTheTopicsFirstEventCatchesUpOnAllOfIt() {
        #expect(
            granted(grant(since: 0).value.sequence(atSince: nil))?.catchUp
                == CatchUpRange(after: 0, through: 500, events: 40))
    }

    @Test func tooManyEventsSinceIsRefusedWithTheWayToCatchUp() {
        #expect(
            granted(grant(since: 100, limit: 28).value.sequence(atSince: 12))?.catchUp?.events == 28, "at the limit")
        let error = refused(grant(since: 100, limit: 27).value.sequence(atSince: 12))
        #expect(error?.code == .tooFarBehind)
        #expect(error?.field == "since")
        #expect(error?.message.contains("GET /api/v1/changes?topic=\(topic)&since=100") == true)
    }

    @Test func sinceAtTheHeadIsGrantedWithoutReading() {
        let answer = granted(grant(since: 500).value.start())
        #expect(answer?.position == 500)
        #expect(answer?.topicSeq == 40)
    }

    @Test func sinceAheadOfTheTopicButNotOfTheLogKeepsTheClientsPosition() {
        let grant = grant(since: 700)
        guard case .askNewest = grant.value.start() else { Issue.record("expected askNewest"); return }
        let answer = granted(grant.value.newest(900))
        #expect(answer?.position == 700)
        #expect(answer?.topicSeq == nil, "the topic's sequence at 700 is not known here")
        #expect(answer?.covered == 700)
    }

    @Test func sinceAheadOfTheWholeLogIsRefused() {
        let error = refused(grant(since: 901).value.newest(900))
        #expect(error?.code == .invalidField)
        #expect(error?.field == "since")
    }
}
