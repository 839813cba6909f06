import Foundation
import Testing
import RoboscopeKit
import RoboscopeKitTesting

/// Live topics against the in-memory service: order, resume, gaps, duplicates,
/// reordering and the fallback to the changes feed, with a clock the test moves.
@Suite struct LiveTopicTests {
    let service = InMemoryService()
    let clock = ManualClock()

    func start(
        from cursor: TopicCursor = TopicCursor(position: 0, topicSeq: 0)
    ) async -> (RoboscopeClient, UUID, EventLog, Task<Void, Never>) {
        let session = await service.addWorkSession().id
        let client = makeClient(service, clock: clock)
        let log = EventLog()
        let task = log.consume(client.follow(.workSession(session), from: cursor))
        return (client, session, log, task)
    }

    static func checkOrder(_ events: [TopicEvent]) {
        let positions = events.map(\.position)
        #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 }, "positions strictly increase")
        let sequences = events.map(\.topicSeq)
        #expect(
            sequences == Array(1...Int64(max(1, sequences.count))).prefix(sequences.count).map { $0 },
            "topic_seq 1, 2, 3, …")
    }

    @Test func eventsArriveInOrderAndResumeAfterADisconnect() async throws {
        let (_, session, log, task) = await start()
        defer { task.cancel() }
        for index in 0..<3 { await service.externalCreate(in: session, label: "m\(index)") }
        // The session's creation, then a marker and its details each.
        try await within { await log.waitForEvents(7) }
        await service.disconnectAll()
        await clock.waitForSleepers()
        await service.externalCreate(in: session, label: "while away")
        await clock.advanceToNextSleep()
        try await within { await log.waitForEvents(9) }
        let events = await log.events
        Self.checkOrder(events)
        #expect(events.count == 9)
        let subscriptions = await service.subscriptions
        #expect(subscriptions.count == 2)
        #expect(subscriptions[0].since == 0)
        #expect(subscriptions[1].since == events[6].position, "resumed from the last event processed")
        let states = await log.states
        #expect(states.starts(with: [.connecting, .live]))
        #expect(states.contains(.offline))
        #expect(states.contains { if case .waitingToRetry = $0 { return true } else { return false } })
        #expect(states.last == .live)
    }

    @Test func duplicatesAreDropped() async throws {
        let (_, session, log, task) = await start()
        defer { task.cancel() }
        try await within { await log.waitForEvents(1) }
        await service.duplicateLive(next: 4)
        for _ in 0..<3 { await service.externalCreate(in: session) }
        try await within { await log.waitForEvents(7) }
        await service.externalCreate(in: session, label: "last")
        try await within { await log.waitForEvents(9) }
        let events = await log.events
        #expect(events.count == 9)
        #expect(Set(events.map(\.position)).count == 9)
        Self.checkOrder(events)
    }

    @Test func aMissingEventIsFilledFromTheFeed() async throws {
        let (_, session, log, task) = await start()
        defer { task.cancel() }
        try await within { await log.waitForEvents(1) }
        await service.dropLive(next: 3)
        await service.externalCreate(in: session, label: "dropped")
        await service.externalCreate(in: session, label: "after")
        try await within { await log.waitForEvents(5) }
        let events = await log.events
        #expect(events.count == 5)
        Self.checkOrder(events)
        #expect(events.contains { $0.data?["label"]?.stringValue == "dropped" })
        #expect(await log.states.contains(.catchingUp))
    }

    @Test func reorderedEventsAreRepaired() async throws {
        let (_, session, log, task) = await start()
        defer { task.cancel() }
        try await within { await log.waitForEvents(1) }
        await service.reorderNextTwo()
        await service.externalCreate(in: session)
        await service.externalCreate(in: session)
        try await within { await log.waitForEvents(5) }
        let events = await log.events
        #expect(events.count == 5)
        Self.checkOrder(events)
    }

    @Test func aClientTooFarBehindCatchesUpFromTheFeed() async throws {
        let session = await service.addWorkSession().id
        for _ in 0..<5 { await service.externalCreate(in: session) }
        await service.setCatchUpLimit(3)
        let client = makeClient(service, clock: clock)
        let log = EventLog()
        let task = log.consume(client.follow(.workSession(session), from: TopicCursor(position: 0, topicSeq: 0)))
        defer { task.cancel() }
        try await within { await log.waitForEvents(11) }
        await service.externalCreate(in: session, label: "live")
        try await within { await log.waitForEvents(13) }
        let events = await log.events
        #expect(events.count == 13)
        Self.checkOrder(events)
        let subscriptions = await service.subscriptions
        #expect(subscriptions.count == 2, "refused, then subscribed again from the feed's end")
        #expect(subscriptions[1].since == events[10].position)
        #expect(await log.states.contains(.catchingUp))
    }

    @Test func malformedAndUnknownMessagesAreSkipped() async throws {
        let (_, session, log, task) = await start()
        defer { task.cancel() }
        try await within { await log.waitForEvents(1) }
        await service.pushRaw("{not json")
        await service.pushRaw(#"{"op":"brand_new","x":1}"#)
        await service.pushRaw(#"{"op":"event","topic":"x","position":"nope"}"#)
        await service.externalCreate(in: session)
        try await within { await log.waitForEvents(3) }
        Self.checkOrder(await log.events)
    }

    @Test func fromNowOnStartsAtTheTopicsHead() async throws {
        let session = await service.addWorkSession().id
        await service.externalCreate(in: session)
        let client = makeClient(service, clock: clock)
        let log = EventLog()
        let task = log.consume(client.follow(.workSession(session)))
        defer { task.cancel() }
        try await within { while await service.subscriptions.isEmpty { await Task.yield() } }
        await service.externalCreate(in: session, label: "new")
        try await within { await log.waitForEvents(2) }
        let events = await log.events
        #expect(events.map(\.topicSeq) == [4, 5], "only what came after subscribing, numbered on from the head")
        #expect(await service.subscriptions.first?.since == nil)
    }

    @Test func cancellingTheConsumerEndsTheConnection() async throws {
        let (_, _, log, task) = await start()
        try await within { await log.waitForEvents(1) }
        #expect(await service.openConnections == 1)
        task.cancel()
        try await within { while await service.openConnections > 0 { await Task.yield() } }
    }

    @Test func anUnknownTopicEndsTheStreamWithNotFound() async throws {
        let client = makeClient(service, clock: clock)
        let log = EventLog()
        let task = log.consume(client.follow(.workSession(UUID())))
        _ = await task.value
        let failure = await log.failure as? RoboscopeError
        guard case .notFound? = failure else {
            Issue.record("expected notFound, got \(String(describing: failure))")
            return
        }
    }
}

/// A followed topic keeps its socket's token fresh with the `auth` op, without reconnecting.
@Suite struct LiveTokenRefreshTests {
    let service = InMemoryService()
    let clock = ManualClock()

    /// An unsigned JWT expiring at `exp` (the in-memory service reads, not checks, it).
    static func jwt(exp: Date, serial: Int) -> String {
        func part(_ object: [String: Any]) -> String {
            (try! JSONSerialization.data(withJSONObject: object, options: .sortedKeys)).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
                    of: "=", with: "")
        }
        return part(["alg": "HS256"]) + "." + part(["sub": "tester", "exp": exp.timeIntervalSince1970, "jti": serial])
            + ".sig"
    }

    @Test func theTokenIsRefreshedOnTheOpenSocketBeforeItExpires() async throws {
        let session = await service.addWorkSession().id
        let fetches = Counter()
        let clock = clock
        let provider = RefreshingTokenProvider(refreshMargin: .seconds(10), clock: clock) {
            let serial = await fetches.increment()
            return (
                Self.jwt(exp: await clock.now().addingTimeInterval(100), serial: serial),
                await clock.now().addingTimeInterval(100)
            )
        }
        let client = RoboscopeClient(
            RoboscopeConfiguration(
                baseURL: URL(string: "http://in-memory")!, tokenProvider: provider,
                reconnect: RetryPolicy(base: .milliseconds(100), cap: .seconds(1)),
                http: service.http, webSocket: service.webSocket, clock: clock, requestTimeout: nil
            ))
        let log = EventLog()
        let task = log.consume(client.follow(.workSession(session), from: TopicCursor(position: 0, topicSeq: 0)))
        defer { task.cancel() }
        try await within { await log.waitForEvents(1) }
        // The refresher sleeps 80 s (80 % of the token's 100 s); three rounds of it.
        for round in 1...3 {
            await clock.waitForSleepers()
            await clock.advanceToNextSleep()
            try await within(10, "refresh \(round)") {
                while await service.webSocketTokens.count < round + 1 { await Task.yield() }
            }
        }
        let tokens = await service.webSocketTokens
        #expect(tokens.map(\.upgrade) == [true, false, false, false], "one upgrade, then auth ops on the same socket")
        #expect(Set(tokens.map(\.token)).count == 4, "each refresh sends a new token")
        #expect(await service.webSocketConnects == 1, "never reconnected")
        await service.externalCreate(in: session, label: "after the refreshes")
        try await within { await log.waitForEvents(3) }
    }

    @Test func aTokenWithoutExpiryIsNeverRefreshed() async throws {
        let session = await service.addWorkSession().id
        let client = RoboscopeClient(
            RoboscopeConfiguration(
                baseURL: URL(string: "http://in-memory")!, tokenProvider: StaticTokenProvider("api-token-without-exp"),
                http: service.http, webSocket: service.webSocket, clock: clock, requestTimeout: nil
            ))
        let log = EventLog()
        let task = log.consume(client.follow(.workSession(session), from: TopicCursor(position: 0, topicSeq: 0)))
        defer { task.cancel() }
        try await within { await log.waitForEvents(1) }
        #expect(await clock.sleeping == 0, "nothing scheduled")
        #expect(await service.webSocketTokens.map(\.token) == ["api-token-without-exp"])
    }
}

extension LiveTopicTests {
    /// `reconnectNow()` ends the backoff: the topic is live again without the clock
    /// moving, and the coarse `online` stream says false once and true once.
    @Test func reconnectNowSkipsTheBackoffAndOnlineChangesOnce() async throws {
        let session = await service.addWorkSession().id
        let client = makeClient(service, clock: clock)
        let live = client.follow(.workSession(session), from: TopicCursor(position: 0, topicSeq: 0))
        let consumer = Task { for try await _ in live.events {} }
        defer { consumer.cancel() }
        let online = ValueLog<Bool>()
        let watcher = Task { for await value in live.online { await online.add(value) } }
        defer { watcher.cancel() }
        try await within(5, "live") { await online.wait(until: { $0 == [true] }) }
        await service.setReachable(false)
        try await within(5, "offline") { await online.wait(until: { $0 == [true, false] }) }
        // Several failed tries in a row stay one `false`.
        for _ in 0..<3 {
            await clock.waitForSleepers()
            await clock.advanceToNextSleep()
        }
        await clock.waitForSleepers()
        await service.setReachable(true)
        let started = ContinuousClock.now
        client.reconnectNow()
        try await within(5, "live again after reconnectNow()") {
            await online.wait(until: { $0 == [true, false, true] })
        }
        // The manual clock never moved, so only reconnectNow() ended the backoff; the bound
        // guards a loaded CI machine (unloaded it takes milliseconds).
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func theCoarseStateOfEachDetailedOne() {
        #expect(ConnectionState.live.isOnline && ConnectionState.catchingUp.isOnline)
        #expect(![ConnectionState.connecting, .offline, .waitingToRetry(delay: .seconds(1))].contains { $0.isOnline })
    }
}
