@testable import RoboscopeGateway
import RoboscopeDomain
import RoboscopePostgres
import Testing

@Suite struct SubscriptionGrantTests {
    let topic = Topic(.workSession, EntityID("0b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!)
    let head = TopicHead(position: 500, topicSeq: 40)

    func grant(since: Int64?, limit: Int = 100) -> Box<SubscriptionGrant> {
        Box(SubscriptionGrant(topic: topic, since: since, head: head, maxCatchUpEvents: limit))
    }

    func granted(_ step: SubscriptionGrant.Step) -> (position: Int64, topicSeq: Int64?, covered: Int64?)? {
        if case .grant(let position, let topicSeq, let covered) = step { return (position, topicSeq, covered) }
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
    }

    @Test func aCatchUpReadsPagesUntilTheHeadThenAnnouncesIt() {
        let grant = grant(since: 100)
        guard case .read(after: 100) = grant.value.start() else { Issue.record("expected a read after 100"); return }
        guard case .read(after: 300) = grant.mutate({ $0.read(count: 30, last: 300) }) else { Issue.record("expected a second page"); return }
        let answer = granted(grant.mutate { $0.read(count: 10, last: 500) })
        #expect(answer?.position == 500)
        #expect(answer?.topicSeq == 40)
        #expect(answer?.covered == 100)
        #expect(grant.value.caughtUp == 40)
    }

    @Test func anEmptyPageEndsTheCatchUp() {
        let grant = grant(since: 100)
        #expect(granted(grant.mutate { $0.read(count: 0, last: nil) })?.position == 500)
    }

    @Test func tooManyEventsSinceIsRefusedWithTheWayToCatchUp() {
        let grant = grant(since: 100, limit: 50)
        #expect(granted(grant.mutate { $0.read(count: 50, last: 300) }) == nil)
        let error = refused(grant.mutate { $0.read(count: 1, last: 301) })
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
