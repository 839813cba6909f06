import Foundation
import Testing
import RoboscopeDomain
import WebSocketCodec

/// What an operator sees per tenant (docs/operations.md, "Running many customers"): each
/// tenant's requests by outcome, events, database time and sockets under its own label,
/// a bounded number of labels, and access lines naming tenant, subject, address and code.
@Suite(.serialized) struct TenantMetricsTests {
    func metricsText(_ server: ServerProcess) async throws -> String {
        String(decoding: try await server.client.get("/metrics").body, as: UTF8.self)
    }

    /// A series' value as a number (nil when absent).
    func value(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    @Test func eachTenantsRequestsEventsDatabaseTimeAndSocketsCarryItsName() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("tenant_metrics"),
            extraArguments: Tokens.serverArguments()
                + ["--rate-limit", "0.2", "--rate-burst", "5", "--log-format", "json", "--log-level", "info"]
        )
        let quietAdmin = Tokens.bearer(try Tokens.token("quiet", "admin", sub: "quiet-admin"))
        let space = try await server.client.send(
            "POST", "/api/v1/spaces", json: ["key": "q-1", "name": "n"], headers: quietAdmin)
        #expect(space.status == 201)
        let reader = Tokens.bearer(try Tokens.token("quiet", "read", sub: "quiet-reader"))
        #expect(
            try await server.client.send("POST", "/api/v1/spaces", json: ["key": "q-2", "name": "n"], headers: reader)
                .status == 403)
        // The noisy tenant's one subject far past its burst of 5 (one more every 5 s: a slow
        // machine does not refill it between requests).
        let noisy = Tokens.bearer(try Tokens.token("noisy", "read", sub: "noisy-1"))
        var limited = 0
        for _ in 0..<20 where try await server.client.send("GET", "/api/v1/spaces", headers: noisy).status == 429 {
            limited += 1
        }
        #expect(limited > 0)
        #expect(
            try await server.client.send("GET", "/api/v1/spaces", headers: ["Authorization": "Bearer nope"]).status
                == 401)

        let socket = try WebSocketClient(
            port: server.wsPort, headers: ["Authorization: Bearer \(try Tokens.token("quiet", "read"))"])
        let text = try await metricsText(server)
        #expect(
            value(text, #"roboscope_tenant_requests_total{tenant="noisy",outcome="rate_limited"}"#) == Double(limited))
        #expect(value(text, #"roboscope_tenant_requests_total{tenant="quiet",outcome="forbidden"}"#) == 1)
        #expect(value(text, #"roboscope_tenant_requests_total{tenant="quiet",outcome="ok"}"#) ?? 0 >= 1)
        #expect(value(text, #"roboscope_tenant_requests_total{tenant="_unknown",outcome="unauthorized"}"#) == 1)
        #expect(value(text, #"roboscope_tenant_requests_total{tenant="noisy",outcome="forbidden"}"#) == nil)
        #expect(value(text, #"roboscope_tenant_events_appended_total{tenant="quiet"}"#) == 1)
        #expect(value(text, #"roboscope_tenant_events_appended_total{tenant="noisy"}"#) == nil)
        #expect(value(text, #"roboscope_tenant_db_seconds_total{tenant="quiet"}"#) ?? 0 > 0)
        #expect(value(text, #"roboscope_tenant_ws_connections{tenant="quiet"}"#) == 1)
        _ = socket
        try socket.sendClose(.normal)
        try await eventually("the closed socket leaves its tenant's count", within: 10) {
            value(try await metricsText(server), #"roboscope_tenant_ws_connections{tenant="quiet"}"#) == 0
        }
        #expect(await server.terminate() == 0)

        // The access lines: who, from where, and the refusal's code.
        let lines = server.log().split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String]
        }
        let access = lines.filter { $0["message"] == "request" }
        let refused = try #require(access.first { $0["status"] == "429" })
        #expect(refused["tenant"] == "noisy" && refused["subject"] == "noisy-1" && refused["code"] == "rate_limited")
        #expect(
            refused["client_address"] == "127.0.0.1" && refused["duration_ms"] != nil && refused["request_id"] != nil)
        let forbidden = try #require(access.first { $0["status"] == "403" })
        #expect(
            forbidden["tenant"] == "quiet" && forbidden["subject"] == "quiet-reader" && forbidden["code"] == "forbidden"
        )
        #expect(access.contains { $0["status"] == "401" && $0["code"] == "unauthorized" && $0["tenant"] == nil })
        // Times are RFC 3339 UTC with their zone; the line at start names the authentication.
        #expect(lines.allSatisfy { $0["time"]?.hasSuffix("Z") == true })
        let auth = try #require(lines.first { $0["message"] == "authentication in force" })
        #expect(auth["hs256_secret"] == "set" && auth["tenant_claims"] == "tenant" && auth["issuers"] == "any")
        #expect(!server.log().contains(Tokens.secret), "never a secret")
    }

    @Test func pastTheLabelLimitTenantsAreCountedTogether() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("tenant_labels"),
            extraArguments: Tokens.serverArguments() + ["--metrics-max-tenants", "1"]
        )
        for tenant in ["first", "second", "third"] {
            let reply = try await server.client.send(
                "GET", "/api/v1/spaces", headers: Tokens.bearer(try Tokens.token(tenant, "read")))
            #expect(reply.status == 200)
        }
        let text = try await metricsText(server)
        #expect(value(text, #"roboscope_tenant_requests_total{tenant="first",outcome="ok"}"#) == 1)
        #expect(value(text, #"roboscope_tenant_requests_total{tenant="_other",outcome="ok"}"#) == 2)
        #expect(!text.contains(#"tenant="second""#) && !text.contains(#"tenant="third""#))
        #expect(await server.terminate() == 0)
    }

    /// Refused upgrades and 4001/4003 closes are counted by reason and logged with who and
    /// why, at most `--log-refusals-per-second` lines a second, then a count of the rest.
    @Test func refusedSocketsAreCountedByReasonAndLoggedWithinTheirAllowance() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("ws_refusals"),
            extraArguments: Tokens.serverArguments()
                + [
                    "--auth-leeway", "0", "--log-refusals-per-second", "3", "--log-format", "json", "--log-level",
                    "info",
                ]
        )
        for _ in 0..<8 {
            #expect(throws: TestFailure.self) {
                _ = try WebSocketClient(port: server.wsPort, headers: ["Authorization: Bearer forged.token.here"])
            }
        }
        let expired = try Tokens.jwt([
            "sub": "late", "tenant": "acme", "scope": "read", "exp": Date().timeIntervalSince1970 - 10,
        ])
        #expect(throws: TestFailure.self) {
            _ = try WebSocketClient(
                port: server.wsPort, headers: ["Authorization: Bearer \(expired)", "User-Agent: probe/1"])
        }
        // No token at the upgrade, then an op before `auth`: 4001.
        let eager = try WebSocketClient(port: server.wsPort)
        try eager.send(["op": "subscribe", "topic": "work_session:x"])
        #expect(try await eager.closeFrame()?.code == .unauthorized)
        // A refresh naming someone else: 4003.
        let socket = try WebSocketClient(
            port: server.wsPort, headers: ["Authorization: Bearer \(try Tokens.token("acme", "read", sub: "a"))"])
        try socket.send(["op": "auth", "token": .string(try Tokens.token("acme", "read", sub: "b"))])
        #expect(try await socket.closeFrame()?.code == .forbidden)

        try await eventually("every refusal is counted", within: 10) {
            let text = try await metricsText(server)
            return value(text, #"roboscope_ws_refusals_total{reason="invalid_token"}"#) == 8
                && value(text, #"roboscope_ws_refusals_total{reason="expired"}"#) == 1
                && value(text, #"roboscope_ws_refusals_total{reason="missing_token"}"#) == 1
                && value(text, #"roboscope_ws_refusals_total{reason="forbidden"}"#) == 1
        }
        // Each refusal is a line or counted among those left out, once the second it fell
        // in is over (a tick says it).
        func logged() -> (refusals: [[String: String]], leftOut: Int) {
            let lines = server.log().split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String]
            }
            let refusals = lines.filter {
                $0["message"] == "websocket upgrade refused" || $0["message"] == "websocket closed"
            }
            let leftOut = lines.filter { $0["message"] == "websocket refusals left out of the log" }
                .compactMap { Int($0["lines"] ?? "") }.reduce(0, +)
            return (refusals, leftOut)
        }
        try await eventually("every refusal is logged or counted as left out", within: 10) {
            let (refusals, leftOut) = logged()
            return refusals.count + leftOut == 11
        }
        #expect(await server.terminate() == 0)
        let (refusals, leftOut) = logged()
        #expect(leftOut > 0 && refusals.count < 11, "at most 3 a second: \(refusals.count) lines")
        #expect(refusals.allSatisfy { $0["reason"] != nil && $0["code"] != nil && $0["client_address"] == "127.0.0.1" })
        if let closed = refusals.first(where: { $0["reason"] == "forbidden" }) {
            #expect(closed["code"] == "4003" && closed["tenant"] == "acme" && closed["subject"] == "a")
        }
    }
}
