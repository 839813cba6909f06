import Foundation
import Testing
import RoboscopeGeometry
@testable import RoboscopeKit
import RoboscopeKitTesting

/// The offline store and the outbox: writes stored before the call returns, shown at
/// once, sent in order with their keys, settled by their own events, replayed after a
/// restart, and conflicts handed to the app.
@Suite struct OfflineTests {
    let service = InMemoryService()
    let clock = ManualClock()

    static func quad(_ z: Double) -> [Point3] {
        [
            Point3(x: 0, y: 0, z: z), Point3(x: 1, y: 0, z: z), Point3(x: 1, y: 0, z: z + 1),
            Point3(x: 0, y: 0, z: z + 1),
        ]
    }

    /// Lets reconnect and retry waits pass until `done` holds.
    func drive(until done: @escaping @Sendable () async throws -> Bool) async throws {
        try await within(30, "the offline session to settle") {
            while try await !done() {
                await clock.advanceToNextSleep()
                try await Task.sleep(for: .milliseconds(1))
            }
        }
    }

    /// A new work session, and an offline session on it whose store is in memory.
    func newOfflineSession() async throws -> (session: UUID, store: OfflineStore, offline: OfflineWorkSession) {
        let session = await service.addWorkSession().id
        let store = try OfflineStore(path: nil)
        let client = makeClient(service, clock: clock)
        return (session, store, OfflineWorkSession(client: client, store: store, workSessionID: session))
    }

    /// Caches the session, then loses the network and starts following it.
    func goOffline(_ offline: OfflineWorkSession) async throws {
        try await offline.refresh()
        await service.setReachable(false)
        await offline.start()
    }

    /// A marker this client created as "base", which another then relabelled "theirs"
    /// (version 2): a write of the client's still naming version 1 conflicts.
    func aMarkerTheyChanged() async throws -> (session: UUID, client: RoboscopeClient, marker: Marker) {
        let session = await service.addWorkSession().id
        let client = makeClient(service, clock: clock)
        let marker = try await client.createMarker(
            NewMarker(workSessionID: session, label: "base", corners: Self.quad(0)))
        await service.externalUpdate(marker.id, label: "theirs")
        return (session, client, marker)
    }

    /// Waits for `offline.synchronized()`, letting reconnect and retry waits pass: on a
    /// loaded machine the follower can be in a backoff when the wait starts.
    func synchronize(_ offline: OfflineWorkSession) async throws {
        let done = Flag()
        let waiting = Task {
            try await offline.synchronized()
            await done.set()
        }
        defer { waiting.cancel() }
        try await drive { await done.isSet }
    }

    @Test func offlineWritesShowAtOnceAndSettleInOrderWhenOnline() async throws {
        let (session, store, offline) = try await newOfflineSession()
        try await goOffline(offline)

        let first = try NewMarker(workSessionID: session, label: "first", corners: Self.quad(0))
        let second = try NewMarker(workSessionID: session, label: "second", corners: Self.quad(5))
        try await offline.create(first)
        try await offline.create(second)
        try await offline.update(first.id!, MarkerPatch(label: "first, relabelled", corners: Self.quad(10)))
        let read = await offline.markers()
        #expect(read.source == .cache)
        #expect(read.pendingWrites == 3)
        #expect(read.value.map(\.label) == ["first, relabelled", "second"])
        #expect(read.value[0].details?.measurements.nearDistance == 10, "details follow the local points")

        await service.setReachable(true)
        try await drive { try await store.pending().isEmpty }
        try await synchronize(offline)
        let posts = await service.requests.filter { $0.method != "GET" }
        #expect(posts.map(\.method) == ["POST", "POST", "PATCH"], "sent in the order written")
        #expect(Set(posts.compactMap { $0.headers["Idempotency-Key"] }).count == 3)
        #expect(Set(posts.compactMap { $0.headers["traceparent"] }).count == 3, "a trace of its own for each write")
        let settled = await offline.markers(refresh: false)
        #expect(settled.pendingWrites == 0)
        #expect(settled.value == (await service.markers(in: session)), "the store holds what the server holds")
        await offline.stop()
    }

    @Test func theOutboxIsReplayedInOrderAfterARestart() async throws {
        let session = await service.addWorkSession().id
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("kit-\(UUID()).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        await service.setReachable(false)
        do {
            let offline = OfflineWorkSession(
                client: makeClient(service, clock: clock), store: try OfflineStore(path: path),
                workSessionID: session)
            for index in 0..<4 {
                try await offline.create(
                    NewMarker(workSessionID: session, label: "m\(index)", corners: Self.quad(Double(index))))
            }
            // The app is killed: nothing was sent.
        }
        #expect(await service.markers(in: session).isEmpty)
        let store = try OfflineStore(path: path)
        let queued = try store.pending().map(\.sequence)
        #expect(queued == queued.sorted())
        #expect(queued.count == 4)
        let traces = try store.pending().compactMap { $0.traceParent?.header }
        #expect(Set(traces).count == 4, "each write keeps its trace on disk")
        await service.setReachable(true)
        let offline = OfflineWorkSession(
            client: makeClient(service, clock: clock), store: store, workSessionID: session)
        await offline.start()
        try await drive { try await store.pending().isEmpty }
        #expect(await service.markers(in: session).map(\.label) == ["m0", "m1", "m2", "m3"])
        let posts = await service.requests.filter { $0.method == "POST" }
        #expect(
            Set(posts.compactMap { $0.headers["traceparent"] }) == Set(traces),
            "sent after the restart with the traces they were stored with")
        await offline.stop()
    }

    @Test func aConflictGoesToTheResolver() async throws {
        let (session, client, marker) = try await aMarkerTheyChanged()
        let seen = ConflictBox()
        let offline = OfflineWorkSession(
            client: client, store: try OfflineStore(path: nil), workSessionID: session,
            resolver: ConflictResolver { report in
                await seen.keep(report)
                return .retry(MarkerPatch(label: "mine, on top of theirs"))
            })
        try await offline.update(marker.id, MarkerPatch(label: "mine", version: 1))
        await offline.start()
        try await drive { await service.marker(marker.id)?.label == "mine, on top of theirs" }
        let report = try #require(await seen.report)
        #expect(report.currentVersion == 2)
        #expect(report.server?.label == "theirs")
        #expect(report.patch?.label == "mine")
        await offline.stop()
    }

    @Test func byDefaultTheServerWinsAndTheLocalChangeIsReported() async throws {
        let (session, client, marker) = try await aMarkerTheyChanged()
        let store = try OfflineStore(path: nil)
        let offline = OfflineWorkSession(client: client, store: store, workSessionID: session)
        let reports = ReportBox()
        let listening = Task {
            for await report in offline.reports {
                await reports.keep(report)
                return
            }
        }
        defer { listening.cancel() }
        try await offline.update(marker.id, MarkerPatch(label: "mine", version: 1))
        await offline.start()
        try await drive { await reports.first != nil }
        let first = await reports.first
        guard case .conflict(let report, _)? = first else {
            Issue.record("expected a conflict report")
            return
        }
        #expect(report.server?.label == "theirs")
        try await drive { try await store.pending().isEmpty }
        try await synchronize(offline)
        #expect(await offline.markers(refresh: false).value.first?.label == "theirs")
        await offline.stop()
    }
}

actor ReportBox {
    private(set) var first: OutboxReport?
    func keep(_ report: OutboxReport) { if first == nil { first = report } }
}

actor Flag {
    private(set) var isSet = false
    func set() { isSet = true }
}

actor ConflictBox {
    private(set) var report: ConflictReport?
    func keep(_ report: ConflictReport) { self.report = report }
}

extension OfflineTests {
    /// A cached session the server says is gone (deleted, or no longer visible to the
    /// token): the cache is dropped, unsent writes are reported as refused, nothing hangs.
    @Test func aSessionThatVanishesIsDroppedAndItsWritesReported() async throws {
        let (session, store, offline) = try await newOfflineSession()
        try await offline.refresh()
        #expect(try store.cursor(for: .workSession(session)) != nil, "cached")
        await service.setReachable(false)
        try await offline.create(NewMarker(workSessionID: session, label: "made offline", corners: Self.quad(0)))
        await service.forget(session)
        await service.setReachable(true)
        let collected = Task {
            var seen: [OutboxReport] = []
            for await report in offline.reports {
                seen.append(report)
                if case .gone = report { break }
            }
            return seen
        }
        await offline.start()
        try await drive { await offline.gone != nil }
        let seen = await collected.value
        #expect(seen.count == 2, "\(seen)")
        guard case .refused(let write, _)? = seen.first else {
            throw Timeout(description: "no refused report: \(seen)")
        }
        #expect(write.method == "POST")
        guard case .gone(let id, .notFound)? = seen.last else { throw Timeout(description: "no gone report: \(seen)") }
        #expect(id == session)
        #expect(try store.pending().isEmpty, "the outbox holds nothing of it")
        #expect(try store.cursor(for: .workSession(session)) == nil, "the cache is dropped")
        #expect(await offline.markers(refresh: false).value.isEmpty)
        await #expect(throws: RoboscopeError.self) { try await offline.synchronized() }
    }
}

/// A transport that forwards to another until told to stall: then requests hang (a
/// network that accepts and never answers) until cancelled.
final class StallableTransport: HTTPTransport, @unchecked Sendable {
    let inner: any HTTPTransport
    private let lock = NSLock()
    private var stalledFlag = false

    init(_ inner: any HTTPTransport) { self.inner = inner }

    var stalled: Bool {
        get { lock.withLock { stalledFlag } }
        set { lock.withLock { stalledFlag = newValue } }
    }

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        if stalled {
            do { try await Task.sleep(for: .seconds(3600)) } catch { throw RoboscopeError.cancelled }
        }
        return try await inner.send(request)
    }
}

extension OfflineTests {
    /// On a network that accepts and never answers, a refreshing read answers from the
    /// store at its deadline (2 s on the kit's clock), not after the request timeout.
    @Test func aStalledNetworkFallsBackToTheStoreAtTheReadDeadline() async throws {
        let session = await service.addWorkSession().id
        _ = try await makeClient(service, clock: clock).createMarker(
            NewMarker(workSessionID: session, label: "cached", corners: Self.quad(0)))
        let transport = StallableTransport(service.http)
        let client = RoboscopeClient(
            RoboscopeConfiguration(
                baseURL: URL(string: "http://in-memory")!, userID: "tester", http: transport,
                webSocket: service.webSocket,
                clock: clock, requestTimeout: .seconds(30)))
        let offline = OfflineWorkSession(client: client, store: try OfflineStore(path: nil), workSessionID: session)
        try await offline.refresh()
        transport.stalled = true
        let read = Task { await offline.markers() }
        // The read's deadline and the request's timeout are both asleep on the clock.
        await clock.waitForSleepers(2)
        #expect(await clock.requestedSleeps.suffix(2).contains(.seconds(2)))
        await clock.advance(by: .seconds(2))
        let answer = try await within(5, "the read to answer from the store") { await read.value }
        #expect(answer.source == .cache)
        #expect(answer.value.map(\.label) == ["cached"])
    }
}

extension OfflineTests {
    /// `observe()` yields on a local write (pending, from the cache while offline), and
    /// again when the network returns, the write settles and another client's marker
    /// arrives live: no polling.
    @Test func anObservedSessionYieldsOnWritesSettlesAndLiveEvents() async throws {
        let (session, _, offline) = try await newOfflineSession()
        try await offline.refresh()
        await service.setReachable(false)
        let log = ValueLog<OfflineSessionState>()
        let watcher = Task { for await state in offline.observe() { await log.add(state) } }
        defer { watcher.cancel() }
        await offline.start()
        try await offline.create(NewMarker(workSessionID: session, label: "mine", corners: Self.quad(0)))
        try await within(5, "the local write") {
            await log.wait(untilLast: { $0.pendingWrites == 1 && $0.markers.map(\.label) == ["mine"] })
        }
        #expect(await log.values.last?.fromCache == true)

        await service.setReachable(true)
        offline.reconnectNow()
        try await within(5, "settled and live") {
            await log.wait(untilLast: { $0.pendingWrites == 0 && !$0.fromCache })
        }
        await service.externalCreate(in: session, label: "theirs")
        try await within(5, "the live event") {
            await log.wait(untilLast: { $0.markers.map(\.label) == ["mine", "theirs"] })
        }
        #expect(await log.values.last?.connection == .live)
        await offline.stop()
    }

    /// A session started offline with nothing stored takes its snapshot when the network
    /// returns, so what happened before its first connect is not missed.
    @Test func aSessionStartedOfflineMissesNothingFromBeforeItsFirstConnect() async throws {
        let (session, _, offline) = try await newOfflineSession()
        await service.setReachable(false)
        await offline.start()
        await clock.waitForSleepers()
        await service.externalCreate(in: session, label: "made before the first connect")
        await service.setReachable(true)
        offline.reconnectNow()
        try await drive { await offline.markers(refresh: false).value.count == 1 }
        await service.externalCreate(in: session, label: "made after")
        try await drive { await offline.markers(refresh: false).value.count == 2 }
        await offline.stop()
    }
}

extension OfflineTests {
    /// Create, edit with the version a read shows, edit again, then delete, all offline:
    /// every write applies in full when the network returns (each carried the version
    /// the server had when it arrived).
    @Test func createEditEditDeleteOfflineAllApply() async throws {
        let (session, _, offline) = try await newOfflineSession()
        try await goOffline(offline)
        let new = try NewMarker(workSessionID: session, label: "draft", corners: Self.quad(0))
        try await offline.create(new)
        let kept = try NewMarker(workSessionID: session, label: "kept", corners: Self.quad(5))
        try await offline.create(kept)
        var shown = try #require(await offline.markers(refresh: false).value.first { $0.id == new.id })
        #expect(shown.version == 1, "a marker created offline reads as the version the server will give it")
        try await offline.update(new.id!, MarkerPatch(label: "named", version: shown.version))
        shown = try #require(await offline.markers(refresh: false).value.first { $0.id == new.id })
        #expect(shown.version == 2)
        try await offline.update(new.id!, MarkerPatch(label: "renamed", version: shown.version))
        var keptShown = try #require(await offline.markers(refresh: false).value.first { $0.id == kept.id })
        try await offline.update(kept.id!, MarkerPatch(label: "kept, edited", version: keptShown.version))
        try await offline.delete(new.id!)
        let reports = ReportBox()
        let listening = Task { for await report in offline.reports { await reports.keep(report) } }
        defer { listening.cancel() }

        await service.setReachable(true)
        offline.reconnectNow()
        try await synchronize(offline)
        #expect(await reports.first == nil, "no conflict, nothing refused")
        #expect(await service.marker(new.id!) == nil, "deleted after its two edits")
        keptShown = try #require(await service.marker(kept.id!))
        #expect(keptShown.label == "kept, edited")
        let sent = await service.requests.filter { $0.method != "GET" }.map(\.method)
        #expect(sent == ["POST", "POST", "PATCH", "PATCH", "PATCH", "DELETE"])
        #expect(await offline.markers(refresh: false).value == (await service.markers(in: session)))
        await offline.stop()
    }

    /// A delete made offline of a marker someone renamed meanwhile is a conflict for the
    /// resolver, not a silent win.
    @Test func anOfflineDeleteOfAChangedMarkerGoesToTheResolver() async throws {
        let session = await service.addWorkSession().id
        let client = makeClient(service, clock: clock)
        let marker = try await client.createMarker(
            NewMarker(workSessionID: session, label: "base", corners: Self.quad(0)))
        let seen = ConflictBox()
        let offline = OfflineWorkSession(
            client: client, store: try OfflineStore(path: nil), workSessionID: session,
            resolver: ConflictResolver { report in
                await seen.keep(report)
                return .acceptServer
            })
        try await offline.refresh()
        try await offline.delete(marker.id)
        await service.externalUpdate(marker.id, label: "renamed elsewhere")
        await offline.start()
        try await drive { await seen.report != nil }
        let report = try #require(await seen.report)
        #expect(report.deleting)
        #expect(report.currentVersion == 2)
        #expect(await service.marker(marker.id)?.label == "renamed elsewhere", "the server's state stands")
        await offline.stop()
    }
}

extension OfflineTests {
    /// Stopped while its send waits behind a snapshot that cannot finish (a stalled
    /// network), the session keeps the write in the outbox: nothing reported refused.
    @Test func aSendWaitingBehindASnapshotSurvivesAStop() async throws {
        let session = await service.addWorkSession().id
        let transport = StallableTransport(service.http)
        let client = RoboscopeClient(
            RoboscopeConfiguration(
                baseURL: URL(string: "http://in-memory")!, userID: "tester", http: transport,
                webSocket: service.webSocket,
                clock: clock, requestTimeout: nil))
        let store = try OfflineStore(path: nil)
        let offline = OfflineWorkSession(client: client, store: store, workSessionID: session)
        try await offline.refresh()
        transport.stalled = true
        let reading = Task { await offline.markers() }
        defer { reading.cancel() }
        await offline.start()
        try await offline.create(NewMarker(workSessionID: session, label: "kept", corners: Self.quad(0)))
        try await within(5, "the send waits behind the snapshot") {
            while await offline.waitingForExclusive == 0 { try await Task.sleep(for: .milliseconds(1)) }
        }
        await offline.stop()
        try await within(5, "the send loop ended") {
            while await offline.waitingForExclusive > 0 { try await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(try store.pending().map(\.method) == ["POST"], "still queued")
    }
}
