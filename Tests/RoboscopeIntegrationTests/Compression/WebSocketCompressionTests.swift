import Foundation
import RoboscopeDomain
import Testing
import WebSocketCodec

/// permessage-deflate on the gateway, over real sockets (docs/websocket.md, "Compression").
/// Serialized: the compression counters of /metrics are read as deltas.
@Suite(.serialized) struct WebSocketCompressionTests {
    static let server = LazyServer("wsdeflate")

    /// `count` markers in a new session, created in one bulk request.
    static func session(with count: Int, through client: HTTPClient) async throws -> JSONValue {
        let fixtures = Fixtures(client: client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let markers = (0..<count).map { index -> JSONValue in
            var body = Fixtures.markerFields(in: session)
            body["label"] = .string("marker \(index)")
            body["p1"] = [.number(Double(index) / 8), 0, 1]
            return .object(body)
        }
        let stored = try await client.post("/api/v1/markers/bulk", ["markers": .array(markers)])
        guard stored.status == 201 else { throw TestFailure("bulk: \(stored.status)") }
        return session
    }

    /// Subscribes with `since: 0` and reads the catch-up: every event, and the bytes it took.
    static func catchUp(
        _ socket: WebSocketClient, session: JSONValue, events: Int
    ) async throws -> (events: [JSONValue], bytes: Int) {
        try socket.send(["op": "subscribe", "topic": .string("work_session:\(Fixtures.id(session))"), "since": 0])
        _ = try await socket.next(op: "subscribed")
        var seen: [JSONValue] = []
        while seen.count < events { seen.append(try await socket.next(op: "event", timeout: 30)) }
        return (seen, socket.bytesRead)
    }

    @Test func aCatchUpArrivesAsOneCompressedStreamAndReadsTheSame() async throws {
        let (server, _) = try await Self.server.get()
        // The session's creation, and per marker its creation and its details.
        let session = try await Self.session(with: 300, through: server.client)
        let events = 601
        // Each socket opened just before its catch-up: one left idle through another's
        // (slow on a loaded machine) would miss the gateway's pings and be closed.
        let plain = try WebSocketClient(port: server.wsPort)
        #expect(plain.deflate == nil)
        let uncompressed = try await Self.catchUp(plain, session: session, events: events)
        let stream = try WebSocketClient(port: server.wsPort, extensions: PerMessageDeflate.clientOffer)
        #expect(stream.deflate == PerMessageDeflate(serverContextTakeover: true, clientContextTakeover: false))
        let asStream = try await Self.catchUp(stream, session: session, events: events)
        let separate = try WebSocketClient(
            port: server.wsPort,
            extensions: "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
        #expect(separate.deflate == PerMessageDeflate(serverContextTakeover: false, clientContextTakeover: false))
        let oneByOne = try await Self.catchUp(separate, session: session, events: events)
        #expect(asStream.events == uncompressed.events && oneByOne.events == uncompressed.events)
        let streamRatio = Double(asStream.bytes) / Double(uncompressed.bytes)
        let separateRatio = Double(oneByOne.bytes) / Double(uncompressed.bytes)
        #expect(
            streamRatio < 0.25, "a catch-up compressed as one stream: \(streamRatio) of \(uncompressed.bytes) bytes")
        #expect(separateRatio < 0.75 && separateRatio > streamRatio, "each event on its own: \(separateRatio)")
        #expect(try await server.metric("roboscope_ws_deflate_runs_total{kind=\"catch_up\"}") >= events)
    }

    @Test func aBroadcastIsCompressedOnceForEverySubscriberWithItsWindow() async throws {
        let (server, _) = try await Self.server.get()
        let space = try await Fixtures(client: server.client).space()
        let topic: JSONValue = .string("space:\(Fixtures.id(space))")
        let offers =
            Array(repeating: PerMessageDeflate.clientOffer, count: 5) + [
                "permessage-deflate; server_max_window_bits=10", nil,
            ]
        var sockets: [WebSocketClient] = []
        for offer in offers {
            let socket = try WebSocketClient(port: server.wsPort, extensions: offer)
            // From the start, so that the space's creation (which a busy tailer may not
            // have reached yet) arrives, and is counted, before the baseline.
            try socket.send(["op": "subscribe", "topic": topic, "since": 0])
            _ = try await socket.next(op: "subscribed", timeout: 30)
            // A catch-up, read on the catch-up reader's thread: up to 30 s, as `catchUp`
            // waits (one run under a doubled load missed 5 s).
            #expect(try await socket.next(op: "event", timeout: 30)["type"] == "space.created")
            sockets.append(socket)
        }
        let runs = try await server.metric("roboscope_ws_deflate_runs_total{kind=\"shared\"}")
        let description = String(repeating: "A hull section with frames and stringers. ", count: 40)
        let patched = try await server.client.patch(
            "/api/v1/spaces/\(Fixtures.id(space))", ["description": .string(description)])
        #expect(patched.status == 200)
        for socket in sockets {
            let event = try await socket.next(op: "event")
            #expect(event["type"] == "space.updated" && event["data"]?["description"] == .string(description))
        }
        // One event, two windows (15 for five subscribers, 10 for one), the uncompressed
        // subscriber none: two runs, whatever the number of subscribers.
        #expect(try await server.metric("roboscope_ws_deflate_runs_total{kind=\"shared\"}") - runs == 2)
        #expect(
            sockets[0].bytesRead < sockets[6].bytesRead / 3, "\(sockets[0].bytesRead) of \(sockets[6].bytesRead) bytes")
    }

    @Test func aDeflateBombIsClosedWith1009AndACorruptMessageWith1007() async throws {
        let (server, _) = try await Self.server.get()
        let bomb = try WebSocketClient(port: server.wsPort, extensions: PerMessageDeflate.clientOffer)
        let zeros = [UInt8](repeating: 0x20, count: 4 << 20)
        try bomb.sendRaw(
            FrameEncoder.frame(
                .text, MessageDeflater(windowBits: 15, keepsContext: false).compress(zeros),
                maskKey: WebSocketClient.maskKey, compressed: true))
        #expect(try await bomb.closeFrame()?.code == .messageTooBig)

        let corrupt = try WebSocketClient(port: server.wsPort, extensions: PerMessageDeflate.clientOffer)
        try corrupt.sendRaw(
            FrameEncoder.frame(.text, [0xFF, 0xFF, 0xFF], maskKey: WebSocketClient.maskKey, compressed: true))
        #expect(try await corrupt.closeFrame()?.code == .invalidPayload)

        // A client that agreed sends a compressed op; the gateway reads it.
        let session = try await Self.session(with: 0, through: server.client)
        let client = try WebSocketClient(port: server.wsPort, extensions: PerMessageDeflate.clientOffer)
        let op = Array(#"{"op":"subscribe","topic":"work_session:\#(Fixtures.id(session))"}"#.utf8)
        try client.sendRaw(
            FrameEncoder.frame(
                .text, MessageDeflater(windowBits: 15, keepsContext: false).compress(op),
                maskKey: WebSocketClient.maskKey, compressed: true))
        #expect(try await client.next(op: "subscribed")["topic"] != nil)
    }

    @Test func turnedOffTheGatewayAnswersNoExtension() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("wsdeflateoff"), extraArguments: ["--ws-deflate", "off"])
        let socket = try WebSocketClient(port: server.wsPort, extensions: PerMessageDeflate.clientOffer)
        #expect(socket.deflate == nil)
        let rsv1 = FrameEncoder.frame(
            .text, [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00], maskKey: WebSocketClient.maskKey, compressed: true)
        try socket.sendRaw(rsv1)
        #expect(try await socket.closeFrame()?.code == .protocolError)
    }
}
