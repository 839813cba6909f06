import Foundation
import Testing
import RoboscopeDomain

/// `GET /api/v1/changes`: a topic's events after a position, paged, with long polls.
@Suite struct ChangesFeedTests {
    /// One database connection: a long poll that held one would block every write.
    static let server = LazyServer("changes") { ["--db-pool-size", "1"] }

    @Test func pagesListTheTopicInOrderWithDeletions() async throws {
        let (server, _) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let topic = "work_session:\(Fixtures.id(session))"
        let marker = try await fixtures.marker(in: session)
        _ = try await server.client.delete("/api/v1/markers/\(Fixtures.id(marker))")

        let first = try await server.client.get("/api/v1/changes?topic=\(topic)&since=0&limit=2")
        #expect(first.status == 200)
        #expect(first.json["data"]?.count == 2)
        #expect(first.json["has_more"] == true)
        #expect(first.json["next_since"] == first.json["data"]?[1]?["position"])
        let rest = try await server.client.get("/api/v1/changes?topic=\(topic)&since=\(first.json["next_since"]!.int!)")
        let all = (first.json["data"]?.array ?? []) + (rest.json["data"]?.array ?? [])
        #expect(rest.json["has_more"] == false)
        #expect(
            all.map { $0["type"]?.string ?? "" } == [
                "work_session.created", "marker.created", "marker_details.calculated", "marker.deleted",
                "marker_details.deleted",
            ])
        #expect(all.allSatisfy { $0["op"] == "event" && $0["topic"]?.string == topic })
        #expect(all.compactMap { $0["topic_seq"]?.int } == [1, 2, 3, 4, 5])
        // Past the end: nothing, and next_since stays where it was.
        let end = try await server.client.get("/api/v1/changes?topic=\(topic)&since=\(rest.json["next_since"]!.int!)")
        #expect(end.json["data"] == [])
        #expect(end.json["next_since"] == rest.json["next_since"])
    }

    @Test func aLongPollAnswersWhenAnEventArrivesWithoutHoldingAConnection() async throws {
        let (server, _) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let topic = "work_session:\(Fixtures.id(session))"
        let head = try await server.client.get("/api/v1/changes?topic=\(topic)&since=0").json["next_since"]!.int!
        let client = server.client
        let polls = (0..<3).map { _ in
            Task { try await client.get("/api/v1/changes?topic=\(topic)&since=\(head)&wait=20") }
        }
        try await eventually("three polls are waiting") {
            let metrics = try await client.get("/metrics")
            return String(decoding: metrics.body, as: UTF8.self).contains("roboscope_changes_waiting 3")
        }
        // With the only pool connection free, the write goes through at once.
        let started = ContinuousClock.now
        let marker = try await fixtures.marker(in: session)
        for poll in polls {
            let reply = try await poll.value
            #expect(reply.json["data"]?[0]?["stream_id"] == marker["id"])
        }
        #expect(ContinuousClock.now - started < .seconds(10), "woken by the append, not by the timeout")
        // A poll that finds nothing answers empty when its time runs out.
        let quiet = try await client.get("/api/v1/changes?topic=\(topic)&since=\(Int64.max - 1)&wait=0.2")
        #expect(quiet.status == 200)
        #expect(quiet.json["data"] == [])
    }

    /// Hummingbird closes a connection after a handler that watched for the client going
    /// away, and did so without saying it: a client that sent its next request on it (as
    /// HTTP/1.1 allows) found it closed, and a test's client waited 30 s for an answer.
    /// Only a poll that has to wait watches, and its answer says the connection closes.
    @Test func aPollThatFindsEventsKeepsTheConnectionOneThatWaitedSaysItCloses() async throws {
        let (server, _) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let topic = "work_session:\(Fixtures.id(session))"
        let port = server.port
        let request = { @Sendable (query: String) in
            "GET /api/v1/changes?topic=\(topic)&\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        }
        let found = try await onOwnThread {
            try WebSocketClient.rawExchange(port: port, request("since=0&wait=5"), idle: 1)
        }
        #expect(found.text.hasPrefix("HTTP/1.1 200"), "\(found.text)")
        #expect(!found.closed, "the connection stays open for the next request")
        #expect(!found.text.lowercased().contains("connection: close"))
        let waited = try await onOwnThread {
            try WebSocketClient.rawExchange(port: port, request("since=\(Int64.max - 1)&wait=0.2"), idle: 5)
        }
        #expect(waited.text.hasPrefix("HTTP/1.1 200"), "\(waited.text)")
        #expect(waited.text.lowercased().contains("connection: close"), "\(waited.text)")
        #expect(waited.closed)
    }

    @Test func badInputIsNamedAndUnknownTopicsAreNotFound() async throws {
        let (server, _) = try await Self.server.get()
        let cases: [(String, String)] = [
            ("", "topic"), ("topic=session:\(UUID())", "topic"), ("topic=work_session:nope", "topic"),
            ("topic=work_session:\(UUID())&since=-1", "since"), ("topic=work_session:\(UUID())&since=x", "since"),
            ("topic=work_session:\(UUID())&limit=0", "limit"), ("topic=work_session:\(UUID())&limit=1001", "limit"),
            ("topic=work_session:\(UUID())&wait=31", "wait"), ("topic=work_session:\(UUID())&wait=soon", "wait"),
        ]
        for (query, field) in cases {
            let reply = try await server.client.get("/api/v1/changes?\(query)")
            #expect(reply.status == 400, "\(query)")
            #expect(reply.json["error"]?["field"]?.string == field, "\(query)")
        }
        let unknown = try await server.client.get("/api/v1/changes?topic=space:\(UUID().uuidString.lowercased())")
        #expect(unknown.status == 404)
    }
}

/// The gateway's side of the sync protocol: `subscribed` names where the topic stands,
/// and a client too far behind is sent to the changes feed.
@Suite struct GatewaySyncTests {
    static let server = LazyServer("gateway_sync") { ["--ws-max-catch-up", "5"] }

    /// A socket subscribed to `topic` (live events only), to learn when the gateway has
    /// followed the log up to a write: it follows a moment behind the API, longer on a
    /// busy machine, and `subscribed` names where the gateway stands, not the API.
    static func watcher(_ server: ServerProcess, _ topic: String) async throws -> WebSocketClient {
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "subscribe", "topic": .string(topic)])
        _ = try await socket.next(op: "subscribed")
        return socket
    }

    /// A new work session on the suite's server, its topic, and a subscriber of it.
    static func watchedSession() async throws -> (
        server: ServerProcess, fixtures: Fixtures, session: JSONValue, topic: String, watcher: WebSocketClient
    ) {
        let (server, _) = try await server.get()
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let topic = "work_session:\(Fixtures.id(session))"
        return (server, fixtures, session, topic, try await watcher(server, topic))
    }

    /// Returns once `watcher` received the event at `position`.
    static func delivered(_ position: JSONValue?, to watcher: WebSocketClient) async throws {
        while try await watcher.next(op: "event")["position"] != position {}
    }

    @Test func subscribedNamesTheTopicsHeadAndItsNumber() async throws {
        let (server, fixtures, session, topic, watcher) = try await Self.watchedSession()
        _ = try await fixtures.marker(in: session)
        let last = try await TopicOrderTests.feed(server.client, topic, since: 0).last!
        try await Self.delivered(last["position"], to: watcher)
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "subscribe", "topic": .string(topic)])
        let subscribed = try await socket.next(op: "subscribed")
        #expect(subscribed["position"] == last["position"])
        #expect(subscribed["topic_seq"] == last["topic_seq"])
        // Resuming from the subscription's position replays nothing and continues at the next number.
        let resumed = try WebSocketClient(port: server.wsPort)
        try resumed.send(["op": "subscribe", "topic": .string(topic), "since": subscribed["position"]!])
        _ = try await resumed.next(op: "subscribed")
        _ = try await fixtures.marker(in: session)
        #expect(try await resumed.next(op: "event")["topic_seq"]?.int == (last["topic_seq"]?.int ?? 0) + 1)
    }

    @Test func aClientTooFarBehindIsSentToTheChangesFeed() async throws {
        let (server, fixtures, session, topic, watcher) = try await Self.watchedSession()
        for _ in 0..<4 { _ = try await fixtures.marker(in: session) }
        try await Self.delivered(
            try await TopicOrderTests.feed(server.client, topic, since: 0).last?["position"], to: watcher)
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "subscribe", "topic": .string(topic), "since": 0])
        let refusal = try await socket.next(op: "error")
        #expect(refusal["code"] == "too_far_behind")
        #expect(refusal["message"]?.string?.contains("/api/v1/changes?topic=\(topic)&since=0") == true)
        // A position ahead of the whole log is refused too.
        try socket.send(["op": "subscribe", "topic": .string(topic), "since": .integer(Int64.max - 1)])
        #expect(try await socket.next(op: "error")["field"] == "since")
    }
}
