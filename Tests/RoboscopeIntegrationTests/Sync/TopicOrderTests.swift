import Foundation
import Testing
import RoboscopeDomain

/// Order on a topic (docs/ordering.md): with 16 concurrent writers over 4 work sessions
/// of one space, every topic's events arrive with strictly increasing positions and
/// topic_seq 1, 2, 3, … without a jump, the same on two gateways and in the changes feed.
@Suite struct TopicOrderTests {
    @Test func sixteenWritersGiveEveryTopicOneCheckableOrder() async throws {
        let url = try await TestDatabase.fresh("topic_order")
        let api = try await ServerProcess(databaseURL: url)
        let second = try await ServerProcess(databaseURL: url, extraArguments: ["--role", "gateway"])
        defer { api.stopWithoutWaiting(); second.stopWithoutWaiting() }
        let fixtures = Fixtures(client: api.client)
        let space = try await fixtures.space()
        var sessions: [JSONValue] = []
        for _ in 0..<4 { sessions.append(try await fixtures.session(in: space)) }
        let topics = ["space:\(Fixtures.id(space))"] + sessions.map { "work_session:\(Fixtures.id($0))" }

        // Both gateways, every topic, subscribed before the writers start.
        var subscribers: [(gateway: Int, topic: String, socket: WebSocketClient, start: JSONValue)] = []
        for (gateway, port) in [api.wsPort, second.wsPort].enumerated() {
            for topic in topics {
                let socket = try WebSocketClient(port: port)
                try socket.send(["op": "subscribe", "topic": .string(topic)])
                subscribers.append((gateway, topic, socket, try await socket.next(op: "subscribed")))
            }
        }

        let written = sessions
        let client = api.client
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<16 {
                group.addTask { try await Self.write(writer, sessions: written, client: client) }
            }
            try await group.waitForAll()
        }

        // What the feed lists after each subscription's start is what it must receive.
        var received: [String: [[Int64]]] = [:]
        for subscriber in subscribers {
            let since = subscriber.start["position"]?.int ?? 0
            let expected = try await Self.feed(api.client, subscriber.topic, since: since)
            #expect(!expected.isEmpty)
            var events: [JSONValue] = []
            while events.count < expected.count {
                let message = try await subscriber.socket.nextJSON(timeout: 20)
                if message["op"] == "event" { events.append(message) }
            }
            let positions = events.compactMap { $0["position"]?.int }
            let sequences = events.compactMap { $0["topic_seq"]?.int }
            #expect(
                zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 },
                "positions strictly increase on \(subscriber.topic)")
            let first = (subscriber.start["topic_seq"]?.int ?? 0) + 1
            #expect(
                sequences == Array(first..<(first + Int64(sequences.count))),
                "topic_seq has no jump on \(subscriber.topic)")
            #expect(
                events == expected, "gateway \(subscriber.gateway) sends what the feed lists on \(subscriber.topic)")
            received[subscriber.topic, default: []].append(positions)
        }
        // A gateway whose tailer was further behind when it subscribed has a few events
        // more at the start; from where both started, the two agree.
        for (topic, streams) in received {
            try #require(streams.count == 2)
            let common = max(streams[0].first ?? 0, streams[1].first ?? 0)
            #expect(
                streams[0].filter { $0 >= common } == streams[1].filter { $0 >= common },
                "both gateways agree on \(topic)")
            #expect(streams.allSatisfy { $0.last == streams[0].last })
        }
        // From the start of the log, each topic counts from 1.
        for topic in topics {
            let all = try await Self.feed(api.client, topic, since: 0)
            #expect(all.compactMap { $0["topic_seq"]?.int } == Array(1...Int64(all.count)))
        }
    }

    /// One writer's mix: creates, bulk creates, patches, deletes and a session update,
    /// spread over the sessions.
    static func write(_ writer: Int, sessions: [JSONValue], client: HTTPClient) async throws {
        for step in 0..<12 {
            let session = sessions[(writer + step) % sessions.count]
            let sessionID = Fixtures.id(session)
            switch step % 4 {
            case 0, 1:
                var body = Fixtures.quad
                body["work_session_id"] = .string(sessionID)
                let created = try await client.post("/api/v1/markers", .object(body))
                guard created.status == 201 else { throw TestFailure("create: \(created.status)") }
                let path = "/api/v1/markers/\(Fixtures.id(created.json))"
                _ = try await client.patch(
                    path, ["label": .string("w\(writer)s\(step)"), "p1": [0, 0, .integer(Int64(step))]])
                if step % 4 == 1 { _ = try await client.delete(path) }
            case 2:
                var item = Fixtures.quad
                item["work_session_id"] = .string(sessionID)
                let bulk = try await client.post(
                    "/api/v1/markers/bulk", ["markers": [.object(item), .object(item), .object(item)]])
                guard bulk.status == 201 else { throw TestFailure("bulk: \(bulk.status)") }
            default:
                _ = try await client.patch(
                    "/api/v1/work-sessions/\(sessionID)", ["meta": ["writer": .integer(Int64(writer))]])
            }
        }
    }

    /// Every message of the feed after `since`, page by page.
    static func feed(_ client: HTTPClient, _ topic: String, since: Int64, limit: Int = 200) async throws -> [JSONValue]
    {
        var messages: [JSONValue] = []
        var since = since
        while true {
            let page = try await client.get("/api/v1/changes?topic=\(topic)&since=\(since)&limit=\(limit)")
            guard page.status == 200 else { throw TestFailure("feed: \(page.status) \(page.json)") }
            messages += page.json["data"]?.array ?? []
            since = page.json["next_since"]?.int ?? since
            if page.json["has_more"] != true { return messages }
        }
    }
}
