import Foundation
import Testing
import RoboscopeDomain

/// `since` replays what a client missed, with no gap and no duplicate at the seam,
/// while writes keep coming; and every gateway on a database delivers every event.
@Suite(.serialized) struct GatewayResumeTests {
    /// Posts `count` markers one after another into `session`.
    static func write(_ count: Int, markersTo session: JSONValue, through client: HTTPClient) -> Task<Void, any Error> {
        Task {
            let fixtures = Fixtures(client: client)
            for index in 0..<count {
                _ = try await fixtures.marker(in: session, ["label": .string("m\(index)")])
            }
        }
    }

    /// Positions of marker and details events until `count` marker.created events have
    /// arrived. (Whether the session's own creation arrives depends on when the
    /// subscription started, so it is left out of the comparison.)
    static func positions(from socket: WebSocketClient, untilCreated count: Int, seen: inout [Int64]) async throws {
        var created = 0
        while created < count {
            let event = try await socket.next(op: "event", timeout: 20)
            guard event["stream_type"]?.string?.hasPrefix("marker") == true else { continue }
            seen.append(event["position"]?.int ?? -1)
            if event["type"] == "marker.created" { created += 1 }
        }
    }

    @Test func resumingWithSinceWhileWritesContinueLosesAndRepeatsNothing() async throws {
        let (server, _) = try await SharedServer.shared.get()
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let topic: JSONValue = .string("work_session:\(Fixtures.id(session))")
        let total = 60

        // The reference: one client that stays connected throughout.
        let steady = try WebSocketClient(port: server.wsPort)
        try steady.send(["op": "subscribe", "topic": topic])
        _ = try await steady.next(op: "subscribed")
        var flaky = try WebSocketClient(port: server.wsPort)
        try flaky.send(["op": "subscribe", "topic": topic])
        _ = try await flaky.next(op: "subscribed")

        let writer = Self.write(total, markersTo: session, through: server.client)
        var flakySeen: [Int64] = []
        var createdSoFar = 0
        // Drop and resume three times while the writer runs.
        for round in 0..<3 {
            try await Self.positions(from: flaky, untilCreated: 5, seen: &flakySeen)
            createdSoFar += 5
            flaky = try WebSocketClient(port: server.wsPort)
            // Away while the writer goes on: back once more markers exist than it saw.
            let away = createdSoFar + round + 1
            try await eventually("\(away) markers written") {
                try await server.client.get("/api/v1/markers?work_session_id=\(Fixtures.id(session))").json.array?
                    .count ?? 0 >= away
            }
            try flaky.send(["op": "subscribe", "topic": topic, "since": .integer(flakySeen.last!)])
            _ = try await flaky.next(op: "subscribed")
        }
        try await writer.value
        try await Self.positions(from: flaky, untilCreated: total - createdSoFar, seen: &flakySeen)

        var steadySeen: [Int64] = []
        try await Self.positions(from: steady, untilCreated: total, seen: &steadySeen)
        #expect(flakySeen == steadySeen)
        #expect(Set(flakySeen).count == flakySeen.count)
        // Every marker and its details, but the last details (reading stops at the last marker).
        #expect(flakySeen.count == total * 2 - 1)
    }

    @Test func sinceZeroReplaysTheWholeTopic() async throws {
        let (server, _) = try await SharedServer.shared.get()
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let marker = try await fixtures.marker(in: session)
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "subscribe", "topic": .string("work_session:\(Fixtures.id(session))"), "since": 0])
        _ = try await socket.next(op: "subscribed")
        #expect(try await socket.next(op: "event")["type"] == "work_session.created")
        let created = try await socket.next(op: "event")
        #expect(created["type"] == "marker.created")
        #expect(created["data"] == marker)
    }

    @Test func twoGatewaysOnOneDatabaseBothDeliverEveryEvent() async throws {
        let database = try await TestDatabase.fresh("twogateways")
        let first = try await ServerProcess(databaseURL: database)
        let second = try await ServerProcess(databaseURL: database)
        let fixtures = Fixtures(client: first.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let topic: JSONValue = .string("work_session:\(Fixtures.id(session))")
        var sockets: [WebSocketClient] = []
        for server in [first, second] {
            let socket = try WebSocketClient(port: server.wsPort)
            try socket.send(["op": "subscribe", "topic": topic])
            _ = try await socket.next(op: "subscribed")
            sockets.append(socket)
        }
        // Writes through both APIs, concurrently.
        let writers = [first, second].map { Self.write(15, markersTo: session, through: $0.client) }
        for writer in writers { try await writer.value }
        var seen: [[Int64]] = []
        for socket in sockets {
            var positions: [Int64] = []
            try await Self.positions(from: socket, untilCreated: 30, seen: &positions)
            seen.append(positions)
        }
        #expect(seen[0] == seen[1])
        #expect(seen[0].count == 59)
    }

    @Test func apiAndGatewayRolesRunApart() async throws {
        let database = try await TestDatabase.fresh("roles")
        let api = try await ServerProcess(databaseURL: database, extraArguments: ["--role", "api"])
        let gateway = try await ServerProcess(databaseURL: database, extraArguments: ["--role", "gateway"])
        // The API process has no WebSocket port; the gateway process answers probes and scrapes only.
        #expect(throws: TestFailure.self) { _ = try WebSocketClient(port: api.wsPort) }
        #expect(try await gateway.client.get("/readyz").status == 200)
        #expect(try await gateway.client.get("/api/v1/spaces").status == 404)

        let fixtures = Fixtures(client: api.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let socket = try WebSocketClient(port: gateway.wsPort)
        try socket.send(["op": "subscribe", "topic": .string("work_session:\(Fixtures.id(session))")])
        _ = try await socket.next(op: "subscribed")
        let marker = try await fixtures.marker(in: session)
        #expect(try await socket.nextEvent(streamType: "marker")["stream_id"] == marker["id"])
        let metrics = String(decoding: try await gateway.client.get("/metrics").body, as: UTF8.self)
        #expect(metrics.contains("roboscope_ws_connections 1"))
        #expect(await api.terminate() == 0)
        #expect(await gateway.terminate() == 0)
    }
}
