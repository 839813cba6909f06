import Foundation
import Testing
import RoboscopeGeometry
import RoboscopeKit
import RoboscopeKitTesting

/// The REST client: typed errors, retries with one key, backoff bounds, cancellation,
/// tokens, and models decoded as the iOS app decodes them.
@Suite struct ClientTests {
    let service = InMemoryService()
    let clock = ManualClock()

    static let quad = [
        Point3(x: 0, y: 0, z: 1), Point3(x: 2, y: 0, z: 1), Point3(x: 2, y: 0, z: 4), Point3(x: 0, y: 0, z: 4),
    ]

    @Test func aWriteIsRetriedOn503WithItsOneKey() async throws {
        let session = await service.addWorkSession().id
        let client = makeClient(service, clock: clock)
        await service.fail(next: 2)
        let create = Task {
            try await client.createMarker(NewMarker(workSessionID: session, label: "valve", corners: Self.quad))
        }
        for _ in 0..<2 {
            await clock.waitForSleepers()
            await clock.advanceToNextSleep()
        }
        let marker = try await create.value
        #expect(marker.label == "valve")
        #expect(
            marker.details?.measurements == MarkerMeasurements(corners: Self.quad),
            "the server's details, the kit's geometry")
        let posts = await service.requests.filter { $0.method == "POST" }
        #expect(posts.count == 3)
        #expect(Set(posts.compactMap { $0.headers["Idempotency-Key"] }).count == 1, "one key on every attempt")
        let traces = Set(posts.compactMap { $0.headers["traceparent"] })
        #expect(traces.count == 1, "one trace for the call's attempts")
        #expect(traces.allSatisfy { TraceParent($0) != nil })
        let sleeps = await clock.requestedSleeps
        #expect(sleeps.count == 2)
        // Retry-After: 1 is a floor under the jittered delay.
        #expect(sleeps.allSatisfy { $0 >= .seconds(1) })
    }

    @Test func aLargeBodyGoesGzippedAndTheInMemoryServiceReadsIt() async throws {
        let session = await service.addWorkSession().id
        let client = makeClient(service, clock: clock)
        // Over the 1 KiB threshold (a key the service ignores pads it), then under it.
        let large: [String: JSONValue] = [
            "id": .string(UUID().uuidString), "work_session_id": .string(session.uuidString), "label": "large",
            "padding": .string(String(repeating: "pipe ", count: 400)),
            "p1": [0, 0, 1], "p2": [2, 0, 1], "p3": [2, 0, 4], "p4": [0, 0, 4],
        ]
        let body = try JSONEncoder().encode(large)
        #expect(try await client.send(method: "POST", path: "/markers", body: body, key: "large").status == 201)
        _ = try await client.createMarker(NewMarker(workSessionID: session, label: "small", corners: Self.quad))
        let posts = await service.requests.filter { $0.method == "POST" }
        #expect(posts.map { $0.headers["Content-Encoding"] } == ["gzip", nil])
        #expect(try #require(posts.first?.body).count < body.count / 4, "the padding compresses")
        #expect(await service.markers(in: session).compactMap(\.label).sorted() == ["large", "small"])
    }

    @Test func fourHundredsAreNeverRetriedAndComeTyped() async throws {
        let session = await service.addWorkSession().id
        let client = makeClient(service, clock: clock)
        let marker = try await client.createMarker(NewMarker(workSessionID: session, corners: Self.quad))
        await service.externalUpdate(marker.id, label: "changed elsewhere")
        await #expect(
            throws: RoboscopeError.versionConflict(
                currentVersion: 2, message: "marker \(marker.id) is at version 2, not 1")
        ) {
            _ = try await client.updateMarker(marker.id, MarkerPatch(label: "mine", version: 1))
        }
        do {
            _ = try await client.marker(UUID())
            Issue.record("expected notFound")
        } catch RoboscopeError.notFound {}
        await service.fail(next: 1, status: 422)
        do {
            _ = try await client.createMarker(NewMarker(workSessionID: session, corners: Self.quad))
            Issue.record("expected invalid")
        } catch RoboscopeError.invalid {}
        #expect(await clock.requestedSleeps.isEmpty, "no 4xx was retried")
    }

    @Test func aFailedCallIsReportedWithTheTraceItsAttemptsCarried() async throws {
        let session = await service.addWorkSession().id
        let failures = Locked<[FailedCall]>([])
        var configuration = makeClient(service, clock: clock).configuration
        configuration.onFailedCall = { call in failures.withLock { $0.append(call) } }
        let client = RoboscopeClient(configuration)
        _ = try await client.createMarker(NewMarker(workSessionID: session, corners: Self.quad))
        #expect(failures.withLock { $0 }.isEmpty, "a call that succeeds reports nothing")

        // A 503, retried, then a refusal: one report, naming the one trace both attempts sent.
        await service.fail(next: 1)
        let missing = UUID()
        let read = Task { try await client.marker(missing) }
        await clock.waitForSleepers()
        await clock.advanceToNextSleep()
        await #expect(throws: RoboscopeError.self) { _ = try await read.value }
        let path = "/markers/\(missing.uuidString.lowercased())"
        let gets = await service.requests.filter { $0.method == "GET" && $0.url.path == "/api/v1" + path }
        let sent = Set(gets.compactMap { $0.headers["traceparent"] })
        #expect(gets.count == 2 && sent.count == 1)
        let reported = failures.withLock { $0 }
        #expect(reported.count == 1)
        let failure = try #require(reported.first)
        #expect(failure.traceParent.header == sent.first)
        #expect(failure.method == "GET" && failure.path == path && failure.idempotencyKey == nil)
        if case .notFound = failure.error {} else { Issue.record("reported \(failure.error), not notFound") }
        #expect(failure.description.contains(failure.traceParent.traceID))

        // A write's report carries its key; an app's own trace is the one reported.
        await service.fail(next: 1, status: 422)
        let mine = TraceParent.random()
        await #expect(throws: RoboscopeError.self) {
            _ = try await client.send(
                method: "POST", path: "/markers", body: Data("{}".utf8), key: "k1", traceParent: mine)
        }
        let write = try #require(failures.withLock { $0 }.last)
        #expect(write.traceParent == mine && write.idempotencyKey == "k1")
    }

    @Test func givingUpAfterTheAttemptsSaysUnavailable() async throws {
        let client = makeClient(
            service, clock: clock, retry: RetryPolicy(base: .milliseconds(10), cap: .milliseconds(50), attempts: 3))
        await service.setReachable(false)
        let read = Task { try await client.presentUsers(workSessionID: UUID()) }
        for _ in 0..<2 {
            await clock.waitForSleepers()
            await clock.advanceToNextSleep()
        }
        do {
            _ = try await read.value
            Issue.record("expected a transport error")
        } catch RoboscopeError.transport {}
        #expect(await clock.requestedSleeps.count == 2, "three attempts, two waits")
    }

    @Test func cancellingACallStopsItsRetries() async throws {
        let client = makeClient(service, clock: clock)
        await service.fail(next: 10)
        let call = Task { try await client.presentUsers(workSessionID: UUID()) }
        await clock.waitForSleepers()
        call.cancel()
        do {
            _ = try await call.value
            Issue.record("expected cancelled")
        } catch RoboscopeError.cancelled {}
        #expect(await service.requests.count == 1)
    }

    @Test func backoffDelaysStayWithinTheirJitterBounds() {
        let policy = RetryPolicy(base: .milliseconds(200), cap: .seconds(3), attempts: 10)
        var random = SystemRandomNumberGenerator()
        let ceilings = (1...6).map { policy.ceiling(forRetry: $0) }
        #expect(
            ceilings == [
                .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600), .seconds(3),
                .seconds(3),
            ])
        for retry in 1...6 {
            let delays = (0..<500).map { _ in policy.delay(forRetry: retry, using: &random) }
            #expect(delays.allSatisfy { $0 >= .zero && $0 <= policy.ceiling(forRetry: retry) })
            // Full jitter spreads over the whole range, not only near the ceiling.
            #expect(delays.contains { $0 < policy.ceiling(forRetry: retry) / 4 })
            #expect(delays.contains { $0 > policy.ceiling(forRetry: retry) * 3 / 4 })
        }
        #expect(policy.delay(forRetry: 1, retryAfter: 2, using: &random) >= .seconds(2))
    }

    @Test func oneTokenRefreshAtATimeAndBeforeExpiry() async throws {
        let fetches = Counter()
        let provider = RefreshingTokenProvider(refreshMargin: .seconds(60), clock: clock) {
            let count = await fetches.increment()
            return ("token-\(count)", Date(timeIntervalSince1970: 1_795_000_000 + 300))
        }
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<10 { group.addTask { try await provider.token() } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(Set(tokens) == ["token-1"])
        #expect(await fetches.value == 1)
        await clock.advance(by: .seconds(239))
        #expect(try await provider.token() == "token-1")
        // Within the margin of the expiry (a device that slept): a fresh one.
        await clock.advance(by: .seconds(2))
        #expect(try await provider.token() == "token-2")
    }

    @Test func modelsDecodeAsTheAppDecodesThem() throws {
        let json = """
            {"id":"ED7EAEEE-6FFD-4B79-86C5-C4CEA7A9EC5C","work_session_id":"5be23675-a6cf-48d1-8afa-869d00eac7ce",
             "label":"weld 12","p1":[0,0,1],"p2":[2,0,1],"p3":[2,0,4],"p4":[0,0,4],"color":null,"version":1,
             "meta":{"k":[1,2.5,"x",null,true]},"custom_props":{},"calibrated_data":null,
             "created_at":"2026-11-22T20:54:32Z","updated_at":"2026-11-22T20:54:32Z",
             "details":{"marker_id":"ed7eaeee-6ffd-4b79-86c5-c4cea7a9ec5c","center_location_long":2.5,
             "center_location_cross":1,"left_distance":0,"right_distance":2,"far_distance":4,"near_distance":1,
             "long_size":3,"cross_size":2,"custom_props":{},
             "created_at":"2026-11-22T20:54:32Z","updated_at":"2026-11-22T20:54:32Z"},"a_key_from_a_later_release":1}
            """
        let marker = try WireCoding.decoder().decode(Marker.self, from: Data(json.utf8))
        #expect(marker.details?.measurements == marker.computedMeasurements)
        #expect(marker.meta["k"] == [1, 2.5, "x", nil, true])
        #expect(marker.center == PlanePoint(x: 1, z: 2.5))
        let again = try WireCoding.decoder().decode(Marker.self, from: WireCoding.encoder().encode(marker))
        #expect(again == marker)
        // Dates go out as the wire writes them: RFC 3339, UTC, whole seconds.
        let encoded = String(decoding: try WireCoding.encoder().encode(marker), as: UTF8.self)
        #expect(encoded.contains("\"created_at\":\"2026-11-22T20:54:32Z\""))
    }

    @Test func aPatchSendsOnlyWhatItChangesAndClearsWithNull() throws {
        let patch = MarkerPatch(label: .some(nil), color: "#FF8800", version: 3)
        let text = String(decoding: try WireCoding.encoder().encode(patch), as: UTF8.self)
        #expect(text == ##"{"color":"#FF8800","label":null,"version":3}"##)
        #expect(try WireCoding.decoder().decode(MarkerPatch.self, from: Data(text.utf8)) == patch)
    }
}

actor Counter {
    private(set) var value = 0
    func increment() -> Int {
        value += 1
        return value
    }
}

/// A network that takes requests and never answers (it still lets a cancel end them).
struct SilentTransport: HTTPTransport {
    let sent = SentCount()

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        await sent.add()
        do { try await Task.sleep(for: .seconds(3600)) } catch { throw RoboscopeError.cancelled }
        throw RoboscopeError.transport("unreachable")
    }
}

/// A network that takes requests and never ends them, not even when cancelled (as a
/// swift-corelibs-foundation URLSession data task did once after its cancel).
final class DeafTransport: HTTPTransport, @unchecked Sendable {
    let sent = SentCount()
    private let lock = NSLock()
    private var openCount = 0

    /// Sends that have not ended (all of them).
    var open: Int { lock.withLock { openCount } }

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        lock.withLock { openCount += 1 }
        await sent.add()
        await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
        throw RoboscopeError.transport("unreachable")
    }
}

actor SentCount {
    private(set) var value = 0
    func add() { value += 1 }
}

extension ClientTests {
    /// An attempt that gets no answer within `requestTimeout` (on the kit's clock) is
    /// cancelled and retried like a lost connection; the last one throws a transport
    /// failure that says it timed out.
    @Test func anUnansweredRequestTimesOutAndIsRetried() async throws {
        let silent = SilentTransport()
        try await expectTwoAttemptsThatTimeOut(over: silent)
        #expect(await silent.sent.value == 2)
    }

    /// A transport that loses its cancel cannot hold a call: each attempt ends at its
    /// timeout and is retried, though the sends it abandoned never end.
    @Test func anAttemptWhoseTransportIgnoresTheCancelStillTimesOut() async throws {
        let deaf = DeafTransport()
        try await expectTwoAttemptsThatTimeOut(over: deaf)
        #expect(await deaf.sent.value == 2)
        #expect(deaf.open == 2)
    }

    /// A create over `transport` with two attempts of 5 s each, driven on the manual
    /// clock: it throws a transport failure that says it timed out.
    func expectTwoAttemptsThatTimeOut(over transport: any HTTPTransport) async throws {
        let client = RoboscopeClient(
            RoboscopeConfiguration(
                baseURL: URL(string: "http://in-memory")!, userID: "tester",
                retry: RetryPolicy(base: .milliseconds(100), cap: .seconds(1), attempts: 2),
                http: transport, webSocket: service.webSocket, clock: clock, requestTimeout: .seconds(5)))
        let call = Task { try await client.createSpace(NewSpace(key: "k", name: "n")) }
        await clock.waitForSleepers()
        #expect(await clock.requestedSleeps == [.seconds(5)])
        await clock.advance(by: .seconds(5))
        // The retry's backoff, then the second attempt's timeout.
        await clock.waitForSleepers()
        await clock.advanceToNextSleep()
        await clock.waitForSleepers()
        await clock.advance(by: .seconds(5))
        do {
            _ = try await within(10, "the call to end") { try await call.value }
            Issue.record("expected a timeout")
        } catch RoboscopeError.transport(let failure) {
            #expect(failure.timedOut)
        }
    }

    /// A long poll's attempt gets its wait on top of the timeout.
    @Test func aLongPollMayWaitItsWaitOnTopOfTheTimeout() async throws {
        let client = RoboscopeClient(
            RoboscopeConfiguration(
                baseURL: URL(string: "http://in-memory")!, userID: "tester", retry: .never,
                http: SilentTransport(), webSocket: service.webSocket, clock: clock, requestTimeout: .seconds(5)))
        let poll = Task { try await client.changes(.workSession(UUID()), since: 0, wait: .seconds(20)) }
        await clock.waitForSleepers()
        #expect(await clock.requestedSleeps == [.seconds(25)])
        poll.cancel()
        await #expect(throws: RoboscopeError.cancelled) { try await poll.value }
    }

    /// URLSession's code survives into the error.
    @Test func aURLErrorKeepsItsCode() {
        let failure = TransportFailure(URLError(.notConnectedToInternet))
        #expect(failure.urlError?.code == .notConnectedToInternet)
        #expect(!failure.timedOut)
        #expect(TransportFailure(URLError(.timedOut)).timedOut)
    }
}

extension ClientTests {
    /// The URLSessionWebSocketTask transport is compiled on every platform; on this one it
    /// fails with a typed error instead of hanging (Debian's libcurl has no WebSocket).
    @Test func theURLSessionWebSocketTransportFailsTypedWhereItCannotWork() async throws {
        let outcome = try await within(10, "a URLSession WebSocket to a closed port") {
            do {
                let connection = try await URLSessionWebSocketTransport().connect(
                    to: URL(string: "ws://127.0.0.1:9/")!, headers: [:])
                defer { Task { await connection.close() } }
                _ = try await connection.receive()
                return "received"
            } catch let error as RoboscopeError {
                return "\(error)"
            }
        }
        #expect(outcome != "received")
    }
}
