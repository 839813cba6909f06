import Foundation
import RoboscopeDomain
import Testing
import WebSocketCodec

/// A client that subscribes and unsubscribes faster than the gateway can serve, or
/// floods it with ops, over real sockets (docs/websocket.md "Limits").
@Suite struct SubscriptionChurnTests {
    /// A high op rate, so that only the bound on grants in flight answers the churn.
    /// Pings after 300 s: a client reading a catch-up of thousands of events on a loaded
    /// machine answered the server's ping too late, and was closed as dead.
    static let churn = LazyServer("ws_churn") {
        ["--ws-op-rate", "10000", "--ws-max-pending-subscribes", "4", "--ws-ping-interval", "300"]
    }

    /// Every message until `count` of those matching `op` arrived.
    static func collect(_ socket: WebSocketClient, until done: ([JSONValue]) -> Bool) async throws -> [JSONValue] {
        var messages: [JSONValue] = []
        while !done(messages) { messages.append(try await socket.nextJSON(timeout: 20)) }
        return messages
    }

    @Test func aChurnBurstIsRefusedPastTheBoundAndNoWithdrawnGrantIsServed() async throws {
        let server = try await Self.churn.get().server
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let quad = JSONValue.object(Fixtures.markerFields(in: session))
        let bulk = try await server.client.post(
            "/api/v1/markers/bulk", ["markers": .array(Array(repeating: quad, count: 1000))])
        #expect(bulk.status == 201)
        let topic = "work_session:\(Fixtures.id(session))"
        let granted = "roboscope_ws_subscribe_answers_total{outcome=\"granted\"}"
        let withdrawn = "roboscope_ws_subscribe_answers_total{outcome=\"withdrawn\"}"
        let pages = "roboscope_ws_catch_up_pages_total"
        let (grantedBefore, withdrawnBefore) = (try await server.metric(granted), try await server.metric(withdrawn))
        let pagesBefore = try await server.metric(pages)

        // 150 subscribe-since-0 / unsubscribe pairs in one write, as the review's probe sent.
        let hostile = try WebSocketClient(port: server.wsPort)
        var burst: [UInt8] = []
        for _ in 0..<150 {
            let subscribe = Array(#"{"op":"subscribe","topic":"\#(topic)","since":0}"#.utf8)
            let unsubscribe = Array(#"{"op":"unsubscribe","topic":"\#(topic)"}"#.utf8)
            burst += FrameEncoder.frame(.text, subscribe, maskKey: WebSocketClient.maskKey)
            burst += FrameEncoder.frame(.text, unsubscribe, maskKey: WebSocketClient.maskKey)
        }
        try hostile.sendRaw(burst)
        // Each unsubscribe gets one answer (`unsubscribed`, or `not_subscribed` after a
        // refused subscribe); a refused subscribe gets its error; an accepted one, withdrawn
        // by the unsubscribe that follows, none.
        let answers = try await Self.collect(hostile) {
            $0.filter { $0["op"] == "unsubscribed" || $0["code"] == "not_subscribed" }.count >= 150
        }
        let limited = answers.filter { $0["code"] == "rate_limited" }
        let accepted = 150 - limited.count
        #expect(!limited.isEmpty, "the burst is refused past the bound")
        #expect(accepted >= 4, "the first four at least were asked of the tailer")
        #expect(accepted < 150)
        #expect(limited.allSatisfy { $0["retry_after"] == 1 })
        #expect(answers.filter { $0["op"] == "subscribed" || $0["op"] == "event" }.isEmpty, "nothing was served")
        #expect(answers.filter { $0["op"] == "unsubscribed" }.count == accepted)

        // Every accepted grant is answered as withdrawn (skipped by the tailer, or decided
        // and then dropped by the shard); none was granted, and no page of its 1,000 events
        // was read.
        try await eventually("the tailer answers every withdrawn grant", within: 20) {
            try await server.metric(withdrawn) - withdrawnBefore == accepted
        }
        #expect(try await server.metric(granted) == grantedBefore)
        #expect(try await server.metric(pages) == pagesBefore)
        // The hostile connection, its grants answered, may subscribe again (now, before the
        // server's ping goes unanswered by a socket nobody reads).
        try hostile.send(["op": "subscribe", "topic": .string(topic)])
        _ = try await hostile.next(op: "subscribed", timeout: 20)

        // A well-behaved client is served in full right after.
        let fair = try WebSocketClient(port: server.wsPort)
        try fair.send(["op": "subscribe", "topic": .string(topic), "since": 0])
        _ = try await fair.next(op: "subscribed", timeout: 20)
        var events = 0
        while events < 1001 { if try await fair.next(op: "event", timeout: 20)["op"] == "event" { events += 1 } }
    }

    @Test func opsPastTheConnectionsRateAreRefusedAndItStaysOpen() async throws {
        // A burst of one, refilled every 10 s: what the test sees cannot hang on how fast a
        // loaded machine reads the burst.
        let server = try await LazyServer("ws_op_rate") { ["--ws-op-rate", "0.1"] }.get().server
        let socket = try WebSocketClient(port: server.wsPort)
        var burst: [UInt8] = []
        // Unsubscribes of topics it never had: cheap ops, each answered `not_subscribed`.
        for _ in 0..<40 {
            let op = Array(#"{"op":"unsubscribe","topic":"space:\#(UUID())"}"#.utf8)
            burst += FrameEncoder.frame(.text, op, maskKey: WebSocketClient.maskKey)
        }
        try socket.sendRaw(burst)
        let answers = try await Self.collect(socket) { $0.count >= 40 }
        let limited = answers.filter { $0["code"] == "rate_limited" }
        #expect((37...39).contains(limited.count), "\(limited.count) refused")
        #expect(limited.allSatisfy { $0["limit"] == "connection" && ($0["retry_after"]?.int ?? 0) >= 1 })
        #expect(try await server.metric("roboscope_ws_rate_limited_total") >= 37)
        await server.terminate()
    }

    @Test func aSubjectsConnectionsShareOneBudget() async throws {
        let server = try await LazyServer("ws_subject_rate") {
            Tokens.serverArguments() + ["--ws-op-rate", "1000", "--ws-subject-op-rate", "0.1"]
        }.get().server
        let token = try Tokens.token("acme", "read", sub: "busy")
        let sockets = try (0..<3).map { _ in
            try WebSocketClient(port: server.wsPort, headers: ["Authorization: Bearer \(token)"])
        }
        var answers: [JSONValue] = []
        for socket in sockets {
            var burst: [UInt8] = []
            for _ in 0..<10 {
                burst += FrameEncoder.frame(
                    .text, Array(#"{"op":"unsubscribe","topic":"space:\#(UUID())"}"#.utf8),
                    maskKey: WebSocketClient.maskKey)
            }
            try socket.sendRaw(burst)
        }
        for socket in sockets { answers += try await Self.collect(socket) { $0.count >= 10 } }
        let limited = answers.filter { $0["code"] == "rate_limited" }
        // The subject's burst is one op (refilled every 10 s); each connection alone could send 1,000 a second.
        #expect(
            (27...29).contains(limited.count), "30 ops against a burst of 1 for the subject: \(limited.count) refused")
        #expect(limited.allSatisfy { $0["limit"] == "subject" })
        // Another subject is not concerned.
        let other = try WebSocketClient(
            port: server.wsPort, headers: ["Authorization: Bearer \(try Tokens.token("acme", "read", sub: "calm"))"])
        try other.send(["op": "subscribe", "topic": .string("space:\(UUID())")])
        #expect(try await other.next(op: "error")["code"] == "not_found")
        await server.terminate()
    }

    @Test func aCatchUpCostsItsSizeInTheOpBudget() async throws {
        // A burst of two ops, one a second.
        let server = try await LazyServer("ws_catch_up_cost") { ["--ws-op-rate", "1", "--ws-ping-interval", "300"] }
            .get().server
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let quad = JSONValue.object(Fixtures.markerFields(in: session))
        let topic = "work_session:\(Fixtures.id(session))"
        // A grant's catch-up reaches as far as the gateway's tailer has read the log: a
        // watcher that receives the whole bulk live shows it has (a busy CI run granted
        // before the tailer read the bulk, and the catch-up cost nothing).
        let watcher = try WebSocketClient(port: server.wsPort)
        try watcher.send(["op": "subscribe", "topic": .string(topic)])
        _ = try await watcher.next(op: "subscribed", timeout: 20)
        #expect(
            try await server.client.post(
                "/api/v1/markers/bulk", ["markers": .array(Array(repeating: quad, count: 1000))]
            ).status == 201)
        var created = 0
        while created < 1000 {
            let message = try await watcher.nextJSON(timeout: 20)
            if message["op"] == "event", message["type"] == "marker.created" { created += 1 }
        }
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "subscribe", "topic": .string(topic), "since": 0])
        _ = try await socket.next(op: "subscribed", timeout: 20)
        // 1,000 events and more: ten ops at least, charged after the subscribe's own, leave
        // the connection nine in debt: its next op waits about ten seconds (room for a
        // loaded machine between the grant and the next op).
        try socket.send(["op": "unsubscribe", "topic": .string(topic)])
        // The answer to the unsubscribe: an error, or `unsubscribed` had it been let through.
        var refused: JSONValue = .null
        while refused == .null {
            let message = try await socket.nextJSON(timeout: 20)
            if message["op"] == "error" || message["op"] == "unsubscribed" { refused = message }
        }
        #expect(refused["code"] == "rate_limited")
        #expect((refused["retry_after"]?.int ?? 0) >= 3, "the debt of the catch-up: \(refused)")
    }

    @Test func aTenantsSubjectsShareItsBudget() async throws {
        let server = try await LazyServer("ws_tenant_rate") {
            Tokens.serverArguments()
                + ["--ws-op-rate", "1000", "--ws-subject-op-rate", "1000", "--ws-tenant-op-rate", "0.1"]
        }.get().server
        let first = try WebSocketClient(
            port: server.wsPort, headers: ["Authorization: Bearer \(try Tokens.token("acme", "read", sub: "one"))"])
        let second = try WebSocketClient(
            port: server.wsPort, headers: ["Authorization: Bearer \(try Tokens.token("acme", "read", sub: "two"))"])
        let other = try WebSocketClient(
            port: server.wsPort, headers: ["Authorization: Bearer \(try Tokens.token("globex", "read", sub: "three"))"])
        try first.send(["op": "unsubscribe", "topic": .string("space:\(UUID())")])
        #expect(try await first.next(op: "error")["code"] == "not_subscribed")
        try second.send(["op": "unsubscribe", "topic": .string("space:\(UUID())")])
        let refused = try await second.next(op: "error")
        #expect(refused["code"] == "rate_limited")
        #expect(refused["limit"] == "tenant")
        try other.send(["op": "unsubscribe", "topic": .string("space:\(UUID())")])
        #expect(try await other.next(op: "error")["code"] == "not_subscribed", "another tenant is not concerned")
        await server.terminate()
    }
}
