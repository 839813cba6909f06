import Foundation
import RoboscopeDomain
import Testing

/// A catch-up is read a page at a time as its client's socket drains, off the thread
/// that serves live events (docs/websocket.md "Catch-up"), over real sockets.
@Suite struct CatchUpPagingTests {
    @Test func aClientThatDoesNotReadCostsAFewPagesAndStallsNobody() async throws {
        // A bound of 256 KiB: pages of at most 64 KiB, asked while less than 64 KiB waits.
        let server = try await LazyServer("ws_catch_up_paging") {
            ["--ws-max-buffered", "262144", "--ws-ping-interval", "300", "--ws-max-catch-up", "20000"]
        }.get().server
        let fixtures = Fixtures(client: server.client)
        let space = try await fixtures.space()
        let busy = try await fixtures.session(in: space)
        let quiet = try await fixtures.session(in: space)
        let quad = JSONValue.object(Fixtures.quad.merging(["work_session_id": busy["id"]!]) { $1 })
        for _ in 0..<3 {
            #expect(
                try await server.client.post(
                    "/api/v1/markers/bulk", ["markers": .array(Array(repeating: quad, count: 1000))]
                ).status == 201)
        }
        let busyTopic = "work_session:\(Fixtures.id(busy))"
        // The gateway learns of writes from its tailer, a moment after they were
        // acknowledged, so the head a subscribe names can lag them (what comes after the
        // head then comes live: the protocol's guarantees hold). Under the parallel suites
        // it once named 4,001 after the three bulks. Wait until it has seen all three, so
        // that the catch-up below is the whole of them.
        try await eventually("the gateway's head past the three bulks", within: 30) {
            let probe = try WebSocketClient(port: server.wsPort)
            try probe.send(["op": "subscribe", "topic": .string(busyTopic)])
            return try await probe.next(op: "subscribed", timeout: 20)["topic_seq"]?.int ?? 0 > 6000
        }
        let pages = "roboscope_ws_catch_up_pages_total"
        let events = "roboscope_ws_catch_up_events_total"
        let eventsBefore = try await server.metric(events)

        // The sluggard: asks for all of the busy session (6,000 events and more, about 4 MB)
        // through a 4 KiB receive buffer, and reads nothing but the answer.
        let sluggard = try WebSocketClient(port: server.wsPort, receiveBuffer: 4096)
        try sluggard.send(["op": "subscribe", "topic": .string(busyTopic), "since": 0])
        let subscribed = try await sluggard.next(op: "subscribed", timeout: 20)
        let head = try #require(subscribed["position"]?.int)
        let topicSeq = try #require(subscribed["topic_seq"]?.int)
        #expect(topicSeq > 6000)
        try await eventually("its first page is read", within: 20) { try await server.metric(pages) > 0 }

        // Live delivery to another client goes on meanwhile.
        let watcher = try WebSocketClient(port: server.wsPort)
        try watcher.send(["op": "subscribe", "topic": .string("work_session:\(Fixtures.id(quiet))")])
        _ = try await watcher.next(op: "subscribed", timeout: 20)
        let late = try await fixtures.marker(in: busy, ["label": "after the grant"])
        let elsewhere = try await fixtures.marker(in: quiet)
        var seen: JSONValue = .null
        while seen["type"] != "marker.created" { seen = try await watcher.next(op: "event", timeout: 20) }
        #expect(seen["data"]?["id"] == elsewhere["id"])

        // The reader stops once the sluggard's socket and queue are full, far short of the
        // whole session (the kernel's buffers take some hundreds of KiB).
        try await eventually("the sluggard's catch-up waits for its socket", within: 20) {
            try await server.metric("roboscope_ws_catch_ups_waiting_for_socket") == 1
        }
        let read = try await server.metric(events) - eventsBefore
        #expect(read < Int(topicSeq) / 2, "\(read) of \(topicSeq) events read for a client that reads nothing")

        // When it reads, it gets the whole session once, in order, then the marker written
        // after its grant (held back meanwhile): nothing lost at the seam, nothing twice.
        var positions: [Int64] = []
        var lateArrived = false
        while !lateArrived {
            let event = try await sluggard.next(op: "event", timeout: 20)
            positions.append(try #require(event["position"]?.int))
            lateArrived = event["type"] == "marker.created" && event["data"]?["id"] == late["id"]
        }
        #expect(positions == positions.sorted() && Set(positions).count == positions.count, "in order, none twice")
        #expect(positions.filter { $0 <= head }.count == Int(topicSeq), "the catch-up is the topic up to its head")
        #expect(positions.last! > head)
        try await eventually("nothing waits once it has read", within: 20) {
            try await server.metric("roboscope_ws_catch_ups_waiting_for_socket") == 0
        }
    }
}
