import Foundation
import Testing
import RoboscopeDomain

/// Postgres goes away under a running gateway and comes back: subscriptions are
/// refused meanwhile, then delivery resumes where it stopped, without a restart.
@Suite(.serialized) struct GatewayOutageTests {
    @Test func subscribersKeepReceivingAfterAPostgresOutage() async throws {
        let (url, proxy) = try await TCPProxy.freshDatabase("wsoutage")
        let server = try await ServerProcess(databaseURL: url)
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let other = try await fixtures.session(in: try await fixtures.space())
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "subscribe", "topic": .string("work_session:\(Fixtures.id(session))")])
        _ = try await socket.next(op: "subscribed")

        proxy.stop()
        // Once the gateway has lost Postgres, a new subscription is refused as unavailable.
        let otherTopic: JSONValue = .string("work_session:\(Fixtures.id(other))")
        try await eventually("the gateway notices the outage", within: 20) {
            try socket.send(["op": "subscribe", "topic": otherTopic])
            while true {
                let reply = try await socket.nextJSON(timeout: 10)
                if reply["op"] == "error" { return reply["code"] == "service_unavailable" }
                if reply["op"] == "subscribed" {
                    try socket.send(["op": "unsubscribe", "topic": otherTopic])
                    _ = try await socket.next(op: "unsubscribed")
                    return false
                }
            }
        }

        try proxy.start()
        var marker: JSONValue?
        for _ in 0..<50 where marker == nil {
            marker = try? await fixtures.marker(in: session)
            if marker == nil { try await Task.sleep(for: .milliseconds(200)) }
        }
        let event = try await socket.nextEvent(streamType: "marker", timeout: 10)
        #expect(event["stream_id"] == marker?["id"])
        #expect(await server.terminate() == 0)
        proxy.stop()
    }
}
