import Foundation
import Testing
import RoboscopeKit
import RoboscopePostgres
#if canImport(Glibc)
import Glibc
#endif

/// RoboscopeKit and `roboscope-client` against the real server binary, Postgres and Redis.
@Suite struct ClientKitEndToEndTests {
    static let quad = "\"p1\":[0,0,1],\"p2\":[2,0,1],\"p3\":[2,0,4],\"p4\":[0,0,4]"

    static func kit(_ server: ServerProcess) -> RoboscopeClient {
        RoboscopeClient(
            RoboscopeConfiguration(
                baseURL: URL(string: "http://127.0.0.1:\(server.port)")!, userID: "kit",
                retry: RetryPolicy(base: .milliseconds(100), cap: .seconds(1), attempts: 40)))
    }

    static func session(_ client: RoboscopeClient) async throws -> WorkSession {
        let space = try await client.createSpace(NewSpace(key: "kit-\(UUID())", name: "Kit"))
        return try await client.createWorkSession(NewWorkSession(spaceID: space.id))
    }

    /// A server on a fresh database named `name`, a kit client of it, and a work session
    /// the client made.
    static func serverWithASession(
        _ name: String
    ) async throws -> (databaseURL: String, server: ServerProcess, client: RoboscopeClient, session: WorkSession) {
        let databaseURL = try await TestDatabase.fresh(name)
        let server = try await ServerProcess(databaseURL: databaseURL)
        do {
            let client = kit(server)
            return (databaseURL, server, client, try await session(client))
        } catch {
            server.stopWithoutWaiting()
            throw error
        }
    }

    static func marker(_ session: UUID, _ label: String) -> NewMarker {
        NewMarker(
            workSessionID: session, label: label, p1: Point3(x: 0, y: 0, z: 1), p2: Point3(x: 2, y: 0, z: 1),
            p3: Point3(x: 2, y: 0, z: 4), p4: Point3(x: 0, y: 0, z: 4))
    }

    /// `watch` prints every event once, in order, while the server is killed (SIGKILL) and
    /// restarted and while Postgres is cut off and back; after its own restart it resumes
    /// from the cursor it kept.
    @Test func watchPrintsEveryEventOnceThroughCrashes() async throws {
        let (databaseURL, proxy) = try await TCPProxy.freshDatabase("kit_watch")
        var server = try await ServerProcess(databaseURL: databaseURL)
        let ports = (http: server.port, ws: server.wsPort)
        let client = Self.kit(server)
        let session = try await Self.session(client)
        let topic = "work_session:\(session.id.uuidString.lowercased())"
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("watch-\(UUID())").path
        let watch = try ClientProcess([
            "watch", "--url", "http://127.0.0.1:\(ports.http)", "--topic", topic, "--since", "0", "--state", state,
        ])

        for index in 0..<30 {
            if index == 10 {
                kill(server.process.processIdentifier, SIGKILL)
                _ = await server.process.exitStatus()
                server = try await ServerProcess(databaseURL: databaseURL, ports: ports)
            }
            if index == 20 {
                // Postgres out of reach: a write waits (retrying with its key) until it is back.
                proxy.stop()
                let pending = Task { try await client.createMarker(Self.marker(session.id, "during the outage")) }
                let probes = server.client
                try await eventually("the service answers 503") { try await probes.get("/readyz").status == 503 }
                try proxy.start()
                _ = try await pending.value
            }
            _ = try await client.createMarker(Self.marker(session.id, "m\(index)"))
        }
        let all = try await Self.feed(client, topic)
        try await eventually("watch printed every event", within: 60) { watch.lines.count >= all.count }
        #expect(await watch.stop() == 0, "SIGTERM ends it with 0")
        let printed = watch.lines.map { try! WireCoding.decoder().decode(TopicEvent.self, from: Data($0.utf8)) }
        #expect(printed.map(\.position) == all.map(\.position), "each event once, in order")
        #expect(printed.map(\.topicSeq) == Array(1...Int64(all.count)))
        #expect(watch.lines == all.map(\.raw), "the messages as received")

        // Restarted with its state: only what is new.
        let again = try ClientProcess([
            "watch", "--url", "http://127.0.0.1:\(ports.http)", "--topic", topic, "--state", state,
        ])
        let marker = try await client.createMarker(Self.marker(session.id, "after the restart"))
        try await eventually("the resumed watch printed the new events") { again.lines.count >= 2 }
        #expect(await again.stop(SIGINT) == 0)
        #expect(again.lines.count == 2)
        #expect(again.lines.first?.contains(marker.id.uuidString.lowercased()) == true)
        _ = await server.terminate()
    }

    /// One `apply` input line per label number: a marker create in `session`.
    static func createLines(_ session: UUID, _ labels: ClosedRange<Int>) -> String {
        labels.map {
            "{\"method\":\"POST\",\"path\":\"/markers\","
                + "\"body\":{\"work_session_id\":\"\(session)\",\"label\":\"l\($0)\",\(quad)}}\n"
        }.joined()
    }

    /// `apply` fed `input`, killed (SIGKILL) once some lines settled, then started again
    /// with the same state and input and awaited to its exit.
    static func applyKilledAndResumed(
        url: String, state: String, input: String
    ) async throws -> (killed: ClientProcess, resumed: ClientProcess) {
        let killed = try ClientProcess(["apply", "--url", url, "--state", state])
        killed.write(input)
        try await eventually("some lines settled") { killed.lines.count >= 5 }
        _ = await killed.stop(SIGKILL)
        let resumed = try ClientProcess(["apply", "--url", url, "--state", state])
        resumed.write(input)
        resumed.closeInput()
        try await eventually("the restarted apply exited", within: 60) { resumed.hasEnded }
        return (killed, resumed)
    }

    static func feed(_ client: RoboscopeClient, _ topic: String) async throws -> [TopicEvent] {
        var events: [TopicEvent] = []
        var since: Int64 = 0
        while true {
            let page = try await client.changes(Topic(topic)!, since: since, limit: 1000)
            events += page.data
            since = page.nextSince
            if !page.hasMore { return events }
        }
    }

    /// A work session made through a server that is then stopped, and the ports it
    /// served on (for the server a test starts again there).
    static func sessionOnAStoppedServer(
        _ databaseURL: String
    ) async throws -> (WorkSession, ports: (http: Int, ws: Int)) {
        let seed = try await ServerProcess(databaseURL: databaseURL)
        let made = try await session(kit(seed))
        #expect(await seed.terminate() == 0)
        return (made, (seed.port, seed.wsPort))
    }

    /// A state folder for `apply` that no run has used.
    static func newState() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("apply-\(UUID())").path
    }

    /// `apply` started while the server is down finishes once it is up; a line that is
    /// not a mutation gets an error line and is not sent.
    @Test func applyStartedWhileTheServerIsDownFinishesOnceItIsUp() async throws {
        let databaseURL = try await TestDatabase.fresh("kit_apply_down")
        let (session, ports) = try await Self.sessionOnAStoppedServer(databaseURL)
        let state = Self.newState()
        let apply = try ClientProcess(["apply", "--url", "http://127.0.0.1:\(ports.http)", "--state", state])
        apply.write(Self.createLines(session.id, 1...5))
        apply.write("this is not a mutation\n")
        apply.closeInput()
        try await eventually("the bad line is named") {
            apply.lines.contains { $0.contains("\"line\":6") && $0.contains("error") }
        }
        let server = try await ServerProcess(databaseURL: databaseURL, ports: ports)
        defer { server.stopWithoutWaiting() }
        _ = await apply.process.exitStatus()
        #expect(apply.process.terminationStatus == 1, "a line was not a mutation")
        let settled = apply.lines.filter { $0.contains("\"status\":201") }
        #expect(settled.count == 5)
        for (index, line) in settled.enumerated() {
            #expect(line.hasPrefix("{\"body\":") && line.contains("\"line\":\(index + 1)"))
        }
        #expect(try scalar(databaseURL, "SELECT count(*) FROM markers") == 5)
    }

    /// An outbox that can no longer be written (its folder removed under it) ends the run
    /// with an error once a line is answered, instead of sending that line again forever.
    @Test func applyWhoseOutboxCannotBeWrittenExitsInsteadOfResending() async throws {
        let databaseURL = try await TestDatabase.fresh("kit_apply_lost_outbox")
        let (session, ports) = try await Self.sessionOnAStoppedServer(databaseURL)
        let state = Self.newState()
        let apply = try ClientProcess([
            "apply", "--url", "http://127.0.0.1:\(ports.http)", "--state", state, "--log-requests",
        ])
        apply.write(Self.createLines(session.id, 1...1))
        // Queued and tried once (the server is down), then its folder goes.
        try await eventually("line 1 tried") { apply.errorLines.contains { $0.contains("\"event\":\"failed\"") } }
        try FileManager.default.removeItem(atPath: state)
        let server = try await ServerProcess(databaseURL: databaseURL, ports: ports)
        defer { server.stopWithoutWaiting() }
        try await eventually("apply to exit", within: 60) { apply.hasEnded }
        #expect(await apply.process.exitStatus() != 0)
        let answered = apply.errorLines.filter { $0.contains("\"event\":\"answered\"") }
        #expect(answered.count == 1, "answered once, never sent again: \(answered)")
        #expect(apply.lines.count == 1, "its answer printed once")
        #expect(try scalar(databaseURL, "SELECT count(*) FROM markers") == 1)
    }

    /// Killed (SIGKILL) mid-run and restarted with the same state and the same input, it
    /// applies nothing twice.
    @Test func applyKilledAndRestartedAppliesNothingTwice() async throws {
        let (databaseURL, server, _, session) = try await Self.serverWithASession("kit_apply_kill")
        defer { server.stopWithoutWaiting() }
        let state = Self.newState()
        let input = Self.createLines(session.id, 1...40)
        let (first, second) = try await Self.applyKilledAndResumed(
            url: "http://127.0.0.1:\(server.port)", state: state, input: input)
        #expect(second.process.terminationStatus == 0)
        #expect(try scalar(databaseURL, "SELECT count(*) FROM markers") == 40)
        #expect(try scalar(databaseURL, "SELECT count(DISTINCT label) FROM markers") == 40)
        let lines = Set(
            (first.lines + second.lines).compactMap { line in
                line.range(of: #""line":(\d+)"#, options: .regularExpression).map { String(line[$0]) }
            })
        #expect(lines.count == 40, "every line settled in one run or the other")
    }

    /// Answers lost after the commit (a relay forwards the POST, withholds the answer and
    /// closes the connection, one request in ten): `apply` retries each with its key until
    /// it settles, prints every line once, and exits 0; the service applied each once.
    @Test func applyThroughARelayThatLosesAnswersSettlesEveryLineOnce() async throws {
        let (databaseURL, server, _, session) = try await Self.serverWithASession("kit_apply_lossy")
        defer { server.stopWithoutWaiting() }
        let relay = try LossyRelay(to: server.port) { number, head in head.hasPrefix("POST") && number % 10 == 3 }
        let state = Self.newState()
        let apply = try ClientProcess(["apply", "--url", "http://127.0.0.1:\(relay.port)", "--state", state])
        apply.write(Self.createLines(session.id, 1...50))
        apply.closeInput()
        try await eventually("apply exited", within: 60) { apply.hasEnded }
        #expect(apply.process.terminationStatus == 0)
        #expect(relay.lost.count >= 5, "answers withheld (retries count too): \(relay.lost.count)")
        let numbers = apply.lines.compactMap { line in
            line.range(of: #""line":(\d+)"#, options: .regularExpression).map { Int(line[$0].dropFirst(7))! }
        }
        #expect(numbers.sorted() == Array(1...50), "every line settled once")
        #expect(apply.lines.allSatisfy { $0.contains("\"status\":201") })
        #expect(try scalar(databaseURL, "SELECT count(*) FROM markers") == 50)
        #expect(try scalar(databaseURL, "SELECT count(DISTINCT label) FROM markers") == 50)

        // Killed (SIGKILL) in the middle of a second input through the same relay, and
        // restarted with the same state and input: nothing applied twice, nothing lost.
        let more = Self.createLines(session.id, 51...90)
        let second = Self.newState()
        let (_, resumed) = try await Self.applyKilledAndResumed(
            url: "http://127.0.0.1:\(relay.port)", state: second, input: more)
        #expect(resumed.process.terminationStatus == 0)
        #expect(try scalar(databaseURL, "SELECT count(*) FROM markers") == 90)
        #expect(try scalar(databaseURL, "SELECT count(DISTINCT label) FROM markers") == 90)
    }

    /// Against the real server: a marker created, edited twice with the versions reads
    /// show, and deleted, all before the session sends anything, applies in full; the
    /// versions the kit counted are the server's.
    @Test func createEditEditDeleteQueuedOfflineAppliesInFull() async throws {
        let (databaseURL, server, client, session) = try await Self.serverWithASession("kit_offline_versions")
        defer { server.stopWithoutWaiting() }
        let offline = OfflineWorkSession(client: client, store: try OfflineStore(path: nil), workSessionID: session.id)
        try await offline.refresh()
        let doomed = Self.marker(session.id, "draft")
        let kept = Self.marker(session.id, "kept")
        try await offline.create(doomed)
        try await offline.create(kept)
        for label in ["named", "renamed"] {
            let shown = try #require(await offline.markers(refresh: false).value.first { $0.id == doomed.id })
            try await offline.update(doomed.id!, MarkerPatch(label: label, version: shown.version))
        }
        let keptShown = try #require(await offline.markers(refresh: false).value.first { $0.id == kept.id })
        try await offline.update(kept.id!, MarkerPatch(label: "kept, edited", version: keptShown.version))
        let counted = try #require(await offline.markers(refresh: false).value.first { $0.id == kept.id }).version
        try await offline.delete(doomed.id!)
        await offline.start()
        try await eventually("every write settled", within: 30) {
            await offline.markers(refresh: false).pendingWrites == 0
        }
        let onServer = try await client.markers(workSessionID: session.id).items
        #expect(onServer.map(\.label) == ["kept, edited"])
        #expect(onServer.first?.version == counted, "the kit counted the server's versions")
        try await eventually("the store caught up", within: 30) {
            await offline.markers(refresh: false).value == onServer
        }
        #expect(try scalar(databaseURL, "SELECT count(*) FROM eventlog.events WHERE type = 'marker.deleted'") == 1)
        await offline.stop()
    }

    /// Cancelling the task that awaits a long poll closes its connection: the server's
    /// count of waiting polls drops back while the poll had 20 s left.
    @Test func aCancelledCallClosesItsConnection() async throws {
        let (_, server, client, session) = try await Self.serverWithASession("kit_cancel")
        defer { server.stopWithoutWaiting() }
        let head = try await client.changes(.workSession(session.id), since: 0).nextSince
        let poll = Task { try await client.changes(.workSession(session.id), since: head, wait: .seconds(20)) }
        let metrics = server.client
        try await eventually("the poll is waiting") {
            String(decoding: try await metrics.get("/metrics").body, as: UTF8.self).contains(
                "roboscope_changes_waiting 1")
        }
        poll.cancel()
        do {
            _ = try await poll.value
            Issue.record("expected cancelled")
        } catch RoboscopeError.cancelled {}
        try await eventually("the server saw the connection close", within: 10) {
            String(decoding: try await metrics.get("/metrics").body, as: UTF8.self).contains(
                "roboscope_changes_waiting 0")
        }
    }

    /// A followed topic's `presence` stays the whole list while the gateway sends joins
    /// and leaves (`"presence": "changes"`).
    @Test func aFollowedTopicKeepsThePresentUsersFromJoinsAndLeaves() async throws {
        let server = try await ServerProcess(databaseURL: try await TestDatabase.fresh("kit_presence"))
        defer { server.stopWithoutWaiting() }
        let client = Self.kit(server)
        let session = try await Self.session(client)
        _ = try await client.heartbeat(workSessionID: session.id, user: "ana")
        let live = client.follow(.workSession(session.id))
        // Lists as they come, read by a task that also keeps the topic followed (the
        // follow ends when its events stream goes away). A list may come twice (a
        // reconnect sends the whole list again): the test waits for each state.
        let seen = PresenceLists()
        let reader = Task {
            async let events: Void = { for try await _ in live.events {} }()
            for await list in live.presence { await seen.add(list) }
            _ = try? await events
        }
        defer { reader.cancel() }
        try await eventually("the full list first", within: 30) { await seen.last == ["ana"] }
        _ = try await client.heartbeat(workSessionID: session.id, user: "bo")
        try await eventually("bo joined", within: 30) { await seen.last == ["ana", "bo"] }
        try await client.leave(workSessionID: session.id, user: "ana")
        try await eventually("ana left", within: 30) { await seen.last == ["bo"] }
    }
}

/// The presence lists a followed topic gave, in order.
actor PresenceLists {
    private(set) var all: [[String]] = []
    var last: [String]? { all.last }
    func add(_ list: [String]) { all.append(list) }
}
