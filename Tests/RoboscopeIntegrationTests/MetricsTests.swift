import Foundation
import Testing
import RoboscopeDomain

/// `/metrics` in Prometheus text format, moving with traffic.
@Suite(.serialized) struct MetricsTests {
    /// The value of an unlabelled series, or the sum of a labelled one's lines matching `labels`.
    static func value(_ text: String, _ name: String, labels: String = "") -> Double {
        text.split(separator: "\n")
            .filter {
                !$0.hasPrefix("#") && ($0.hasPrefix(name + " ") || ($0.hasPrefix(name + "{") && $0.contains(labels)))
            }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .reduce(0, +)
    }

    @Test func metricsMoveWithRequestsAppendsAndWebSockets() async throws {
        let server = try await ServerProcess(databaseURL: try await TestDatabase.fresh("metrics"))
        let before = try await server.client.get("/metrics")
        #expect(before.status == 200)
        #expect(before.header("Content-Type")?.hasPrefix("text/plain") == true)
        let beforeText = String(decoding: before.body, as: UTF8.self)
        // Every series exists from the start, at zero, before anything happened.
        for series in [
            "roboscope_events_appended_total", "roboscope_changes_waiting", "roboscope_ws_connections",
            "roboscope_ws_messages_sent_total", "roboscope_ws_slow_consumers_total",
            "roboscope_append_transactions_total", "roboscope_append_requests_total",
            "roboscope_append_groups_split_total", "roboscope_appends_queued",
        ] {
            #expect(
                beforeText.contains("\n\(series) 0") || beforeText.contains("\n\(series) 0.0"),
                "\(series) at zero from the start")
        }
        let appendedBefore = Self.value(beforeText, "roboscope_events_appended_total")

        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let socket = try WebSocketClient(port: server.wsPort)
        try socket.send(["op": "subscribe", "topic": .string("work_session:\(Fixtures.id(session))")])
        _ = try await socket.next(op: "subscribed")
        _ = try await fixtures.marker(in: session)
        _ = try await socket.nextEvent(streamType: "marker")
        _ = try await server.client.get("/api/v1/spaces/\(EntityID.random())")

        let after = String(decoding: try await server.client.get("/metrics").body, as: UTF8.self)
        // space, session, marker and its details.
        #expect(Self.value(after, "roboscope_events_appended_total") - appendedBefore == 4)
        // Three requests one after another: three transactions, none of them shared.
        #expect(Self.value(after, "roboscope_append_requests_total") == 3)
        #expect(Self.value(after, "roboscope_append_transactions_total") == 3)
        #expect(Self.value(after, "roboscope_appends_queued") == 0)
        #expect(Self.value(after, "roboscope_ws_connections") == 1)
        #expect(Self.value(after, "roboscope_ws_messages_sent_total") >= 2)
        #expect(Self.value(after, "roboscope_ws_slow_consumers_total") == 0)
        #expect(after.contains("roboscope_ws_lag_positions"))
        #expect(Self.value(after, "hb_requests", labels: "http_route=\"/api/v1/markers\"") >= 1)
        #expect(Self.value(after, "hb_requests", labels: "http_response_status_code=\"404\"") >= 1)
        #expect(after.contains("http_server_request_duration_bucket{http_route=\"/api/v1/markers\""))
        for pool in ["postgres", "redis"] {
            #expect(Self.value(after, "roboscope_pool_connections", labels: "pool=\"\(pool)\"") >= 1, "\(pool)")
            #expect(after.contains("roboscope_pool_connections_busy{pool=\"\(pool)\"}"), "\(pool)")
            #expect(after.contains("roboscope_pool_jobs_waiting{pool=\"\(pool)\"}"), "\(pool)")
            #expect(
                Self.value(after, "roboscope_pool_connect_failures_total", labels: "pool=\"\(pool)\"") == 0, "\(pool)")
        }
        _ = socket
        #expect(await server.terminate() == 0)
    }
}
