import Foundation
import Testing
import RoboscopeDomain
import RoboscopeKit

/// A write's W3C trace context (DESIGN, "Following one write: tracing"): stored with the
/// events it makes and carried on their `event` messages and changes-feed entries, so a
/// subscriber's copy names the trace of the write; the kit sends one with every request,
/// and `roboscope-client --verbose` prints it.
@Suite struct TraceContextTests {
    static let server = LazyServer("trace_context")

    static func markerBody(_ session: JSONValue) -> JSONValue {
        .object(Fixtures.markerFields(in: session))
    }

    @Test func aWritesTraceReachesItsSubscribersAndTheChangesFeed() async throws {
        let (server, url) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let topic = "work_session:\(Fixtures.id(session))"
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "subscribe", "topic": .string(topic)])
        _ = try await socket.next(op: "subscribed")

        let trace = TraceParent.random()
        let traced = try await server.client.post(
            "/api/v1/markers", Self.markerBody(session), headers: ["traceparent": trace.header])
        #expect(traced.status == 201)
        let live = try await socket.nextEvent(streamType: "marker")
        #expect(live["traceparent"]?.string == trace.header)
        let details = try await socket.next(op: "event")
        #expect(details["traceparent"]?.string == trace.header, "every event the request caused")
        #expect(
            try scalar(
                url, "SELECT count(*) FROM eventlog.events WHERE metadata->>'traceparent' = $1", [trace.header]) == 2,
            "stored with the events")

        // A later version's header is kept as version 00 writes it; a malformed one, and
        // none at all, leave the events without a trace.
        let later = TraceParent.random()
        let laterHeader = "01" + later.header.dropFirst(2) + "-more"
        #expect(
            try await server.client.post(
                "/api/v1/markers", Self.markerBody(session), headers: ["traceparent": laterHeader]
            ).status == 201)
        #expect(try await socket.nextEvent(streamType: "marker")["traceparent"]?.string == later.header)
        #expect(
            try await server.client.post(
                "/api/v1/markers", Self.markerBody(session), headers: ["traceparent": "00-not-a-trace-01"]
            ).status == 201)
        #expect(try await socket.nextEvent(streamType: "marker")["traceparent"] == nil)
        #expect(try await server.client.post("/api/v1/markers", Self.markerBody(session)).status == 201)
        #expect(try await socket.nextEvent(streamType: "marker")["traceparent"] == nil)

        let feed = try await server.client.get("/api/v1/changes?topic=\(topic)&since=0")
        let fromFeed = feed.json["data"]?.array?.first {
            $0["stream_id"] == traced.json["id"] && $0["type"] == "marker.created"
        }
        #expect(fromFeed == live, "the feed lists the message the gateway sent, trace included")
    }

    @Test func theKitsTraceIsTheOneItsSubscribersSee() async throws {
        let (server, _) = try await Self.server.get()
        let client = ClientKitEndToEndTests.kit(server)
        let session = try await ClientKitEndToEndTests.session(client)
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "subscribe", "topic": .string("work_session:\(session.id.uuidString.lowercased())")])
        _ = try await socket.next(op: "subscribed")

        let trace = TraceParent.random()
        let body = try WireCoding.encoder().encode(ClientKitEndToEndTests.marker(session.id, "traced"))
        let answer = try await client.send(
            method: "POST", path: "/markers", body: body, key: UUID().uuidString, traceParent: trace)
        #expect(answer.status == 201)
        #expect(try await socket.nextEvent(streamType: "marker")["traceparent"]?.string == trace.header)

        // Without one given, each call starts a trace of its own, which its events carry.
        _ = try await client.createMarker(ClientKitEndToEndTests.marker(session.id, "untraced"))
        let own = try await socket.nextEvent(streamType: "marker")
        let ownTrace = try #require(own["traceparent"]?.string.flatMap(TraceParent.init))
        #expect(ownTrace.traceID != trace.traceID)
    }

    @Test func theClientSaysEachAttemptsTraceWhenVerbose() async throws {
        let (server, _) = try await Self.server.get()
        let client = try ClientProcess(["get", "--url", "http://127.0.0.1:\(server.port)", "--verbose", "/spaces"])
        client.closeInput()
        #expect(await client.process.exitStatus() == 0)
        try await eventually("the output is collected", within: 10) { client.hasEnded }
        let line = try #require(client.errorLines.first { $0.contains("/api/v1/spaces") }, "\(client.errorLines)")
        #expect(line.hasPrefix("GET /api/v1/spaces traceparent 00-") && line.contains(": 200 in "), "\(line)")
        let header = line.split(separator: " ")[3].dropLast()
        #expect(TraceParent(String(header)) != nil, "\(line)")
    }
}
