import Foundation
import Testing
import RoboscopeDomain

/// Subscribe over a real socket, write over HTTP, receive the event.
@Suite struct GatewaySubscriptionTests {
    func setup() async throws -> (ServerProcess, Fixtures, space: JSONValue, session: JSONValue) {
        let (server, _) = try await SharedServer.shared.get()
        let fixtures = Fixtures(client: server.client)
        let space = try await fixtures.space()
        return (server, fixtures, space, try await fixtures.session(in: space))
    }

    func subscribe(_ socket: WebSocketClient, _ topic: String, since: Int64? = nil) async throws -> JSONValue {
        var message: [String: JSONValue] = ["op": "subscribe", "topic": .string(topic)]
        if let since { message["since"] = .integer(since) }
        try socket.send(.object(message))
        let reply = try await socket.next(op: "subscribed")
        guard reply["op"] == "subscribed", reply["topic"]?.string == topic else {
            throw TestFailure("subscribe: \(reply)")
        }
        return reply
    }

    @Test func markerChangesArriveAsEventsWithTheRESTShape() async throws {
        let (server, fixtures, _, session) = try await setup()
        let socket = try WebSocketClient(port: server.wsPort)
        let topic = "work_session:\(Fixtures.id(session))"
        let subscribed = try await subscribe(socket, topic)
        let head = subscribed["position"]?.int ?? -1
        // The newest event of the topic as the gateway's tailer has read it: right after REST
        // created the session, a loaded machine's tailer may not have read the creation yet,
        // and then it comes live, first.
        if head < 2 {
            #expect(head >= 0)
            #expect(try await socket.next(op: "event")["type"] == "work_session.created")
        }

        let marker = try await fixtures.marker(in: session, ["label": "valve"])
        // The session's own creation may come first: the subscription can start before it.
        let created = try await socket.nextEvent(streamType: "marker")
        #expect(created["type"] == "marker.created")
        #expect(created["topic"]?.string == topic)
        #expect(created["stream_id"] == marker["id"])
        #expect(created["version"] == 1)
        #expect(created["actor"] == "anonymous")
        #expect((created["position"]?.int ?? 0) > head)
        #expect(isWireTimestamp(created["recorded_at"]))
        // The entity as REST returned it, details included.
        #expect(created["data"] == marker)

        let details = try await socket.next(op: "event")
        #expect(details["type"] == "marker_details.calculated")
        #expect(details["data"] == marker["details"])

        let patched = try await server.client.patch(
            "/api/v1/markers/\(Fixtures.id(marker))", ["label": "pump", "p1": [0, 0, 0]])
        #expect(patched.status == 200)
        let updated = try await socket.next(op: "event")
        #expect(updated["type"] == "marker.updated")
        #expect(updated["data"] == patched.json)
        #expect((updated["position"]?.int ?? 0) > (created["position"]?.int ?? 0))

        #expect(try await server.client.delete("/api/v1/markers/\(Fixtures.id(marker))").status == 204)
        var types: [String] = []
        for _ in 0..<3 { types.append(try await socket.next(op: "event")["type"]?.string ?? "") }
        #expect(types.contains("marker.deleted"))
        #expect(types.contains("marker_details.deleted"))
    }

    @Test func aSpaceTopicCarriesTheSpaceAndItsSessions() async throws {
        let (server, fixtures, space, _) = try await setup()
        let socket = try WebSocketClient(port: server.wsPort)
        _ = try await subscribe(socket, "space:\(Fixtures.id(space))")
        let session = try await fixtures.session(in: space)
        // The setup's own session may arrive first: the subscription can start before it.
        var event = try await socket.nextEvent(streamType: "work_session")
        while event["stream_id"] != session["id"] { event = try await socket.nextEvent(streamType: "work_session") }
        #expect(event["type"] == "work_session.created")
        #expect(event["data"] == session)
        let renamed = try await server.client.patch("/api/v1/spaces/\(Fixtures.id(space))", ["name": "Hall 2"])
        let spaceEvent = try await socket.nextEvent(streamType: "space")
        #expect(spaceEvent["type"] == "space.updated")
        #expect(spaceEvent["data"] == renamed.json)
    }

    @Test func lockChangesArriveAsLockMessages() async throws {
        let (server, _, _, session) = try await setup()
        let socket = try WebSocketClient(port: server.wsPort)
        _ = try await subscribe(socket, "work_session:\(Fixtures.id(session))")
        let path = "/api/v1/locks/\(Fixtures.id(session))"
        let acquired = try await server.client.post(path, ["ttl_seconds": 30], headers: ["X-User-Id": "lena"])
        #expect(acquired.json["acquired"] == true)
        let locked = try await socket.next(op: "lock")
        #expect(locked["locked"] == true)
        #expect(locked["holder"] == "lena")
        #expect(locked["fencing_token"] == acquired.json["fencing_token"])
        #expect(isWireTimestamp(locked["expires_at"]))
        _ = try await server.client.send("DELETE", path, json: ["token": acquired.json["token"]!])
        let released = try await socket.next(op: "lock")
        #expect(released["locked"] == false)
        #expect(released["expires_at"] == .null)
    }

    @Test func badMessagesGetErrorsAndTheConnectionStays() async throws {
        let (server, _, _, session) = try await setup()
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(.text, Array("{not json".utf8))
        #expect(try await socket.nextJSON()["code"] == "malformed_request")
        try socket.send(["op": "dance"])
        let unknown = try await socket.nextJSON()
        #expect(unknown["code"] == "unknown_op")
        #expect(unknown["field"] == "op")
        try socket.send(["op": "subscribe", "topic": "marker:123"])
        #expect(try await socket.nextJSON()["field"] == "topic")
        try socket.send(["op": "subscribe", "topic": .string("work_session:\(Fixtures.id(session))"), "since": -4])
        #expect(try await socket.nextJSON()["field"] == "since")
        try socket.send(.binary, [1, 2, 3])
        #expect(try await socket.nextJSON()["code"] == "malformed_request")
        try socket.send(["op": "subscribe", "topic": .string("work_session:\(EntityID.random())")])
        #expect(try await socket.nextJSON()["code"] == "not_found")
        try socket.send([
            "op": "subscribe", "topic": .string("work_session:\(Fixtures.id(session))"), "since": 999_999_999,
        ])
        #expect(try await socket.nextJSON()["field"] == "since")
        try socket.send(["op": "unsubscribe", "topic": .string("work_session:\(Fixtures.id(session))")])
        #expect(try await socket.nextJSON()["code"] == "not_subscribed")
        // Still usable after all that.
        _ = try await subscribe(socket, "work_session:\(Fixtures.id(session))")
        try socket.send(["op": "subscribe", "topic": .string("work_session:\(Fixtures.id(session))")])
        #expect(try await socket.next(op: "error")["code"] == "already_subscribed")
    }

    @Test func unsubscribedTopicsStopArriving() async throws {
        let (server, fixtures, _, session) = try await setup()
        let other = try await fixtures.session(in: try await fixtures.space())
        let socket = try WebSocketClient(port: server.wsPort)
        _ = try await subscribe(socket, "work_session:\(Fixtures.id(session))")
        _ = try await subscribe(socket, "work_session:\(Fixtures.id(other))")
        try socket.send(["op": "unsubscribe", "topic": .string("work_session:\(Fixtures.id(session))")])
        #expect(try await socket.next(op: "unsubscribed")["op"] == "unsubscribed")
        _ = try await fixtures.marker(in: session)
        let marker = try await fixtures.marker(in: other)
        let event = try await socket.nextEvent(streamType: "marker")
        #expect(event["stream_id"] == marker["id"])
    }
}
