import Foundation
import Testing

/// What a page of another site, a forged header or a hostile `Host` can make the
/// service do, probed over real sockets (docs/security.md "Browsers and proxies").
@Suite struct BrowserProbeTests {
    static let server = LazyServer("browsers") {
        [
            "--allowed-origins", "https://app.example.com", "--trusted-proxies", "127.0.0.0/8",
            "--allowed-hosts", "rt.example.com,127.0.0.1",
        ]
    }

    func space(_ client: HTTPClient) async throws -> String {
        let reply = try await client.post("/api/v1/spaces", ["key": .string("k-\(UUID())"), "name": "n"])
        #expect(reply.status == 201)
        return try #require(reply.json["id"]?.string)
    }

    @Test func aWriteThatIsNotJSONIs415NamingTheHeader() async throws {
        let server = try await Self.server.get().server
        let body = Data(#"{"key":"plain","name":"n"}"#.utf8)
        for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
            let reply = try await server.client.send(
                "POST", "/api/v1/spaces", body: body, headers: ["Content-Type": type])
            #expect(reply.status == 415, "\(type)")
            #expect(reply.json["error"]?["code"] == "unsupported_media_type")
            #expect(reply.json["error"]?["field"] == "Content-Type")
        }
        let charset = try await server.client.send(
            "POST", "/api/v1/spaces", body: Data(#"{"key":"utf","name":"n"}"#.utf8),
            headers: ["Content-Type": "Application/JSON; charset=utf-8"])
        #expect(charset.status == 201)
        // No body, no type: a lock release or a delete needs neither.
        let id = try await space(server.client)
        #expect(try await server.client.delete("/api/v1/spaces/\(id)").status == 204)
    }

    @Test func aForeignOriginMayNotWriteAndTheListedOneMay() async throws {
        let server = try await Self.server.get().server
        let foreign = try await server.client.post(
            "/api/v1/spaces", ["key": "evil", "name": "n"],
            headers: ["Origin": "https://evil.example"])
        #expect(foreign.status == 403)
        #expect(foreign.json["error"]?["field"] == "Origin")
        let listed = try await server.client.post(
            "/api/v1/spaces", ["key": .string("app-\(UUID())"), "name": "n"],
            headers: ["Origin": "https://app.example.com"])
        #expect(listed.status == 201)
        let sameOrigin = try await server.client.post(
            "/api/v1/spaces", ["key": .string("same-\(UUID())"), "name": "n"],
            headers: ["Origin": "http://127.0.0.1:\(server.port)"])
        #expect(sameOrigin.status == 201, "the console's own page")
        // Reads are not concerned: CORS keeps their answers from the foreign page.
        #expect(
            try await server.client.send("GET", "/api/v1/spaces", headers: ["Origin": "https://evil.example"]).status
                == 200)
    }

    @Test func aForeignOriginCannotOpenTheWebSocket() async throws {
        let server = try await Self.server.get().server
        let reply = try WebSocketClient.rawRequest(
            port: server.wsPort,
            """
            GET /api/v1/ws HTTP/1.1\r\nHost: 127.0.0.1:\(server.wsPort)\r\n\
            Upgrade: websocket\r\nConnection: Upgrade\r\n\
            Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
            Origin: https://evil.example\r\n\r\n
            """)
        #expect(reply.hasPrefix("HTTP/1.1 403"), "\(reply.prefix(200))")
        let listed = try WebSocketClient(port: server.wsPort, headers: ["Origin: https://app.example.com"])
        try listed.send(["op": "subscribe", "topic": .string("space:\(UUID())")])
        #expect(try await listed.next(op: "error")["code"] == "not_found")
        let native = try WebSocketClient(port: server.wsPort)
        try native.send(["op": "subscribe", "topic": .string("space:\(UUID())")])
        #expect(try await native.next(op: "error")["code"] == "not_found")
    }

    @Test func theRealtimeURLNeverEchoesAnUnlistedHost() async throws {
        let server = try await Self.server.get().server
        let evil = try WebSocketClient.rawRequest(
            port: server.port,
            "GET /api/v1/realtime HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n")
        // Authentication is off here: an unlisted Host is not answered at all (below).
        #expect(evil.hasPrefix("HTTP/1.1 421"))
        #expect(!evil.contains("attacker"))
        let listed = try await server.client.get("/api/v1/realtime")
        #expect(listed.json["websocket_url"]?.string == "ws://127.0.0.1:\(server.wsPort)/api/v1/ws")
        let other = try WebSocketClient.rawRequest(
            port: server.port, "GET /api/v1/realtime HTTP/1.1\r\nHost: RT.example.com:80\r\nConnection: close\r\n\r\n")
        #expect(other.contains("ws://rt.example.com:\(server.wsPort)/api/v1/ws"))
    }

    /// Issue 45: with authentication off, a page on a DNS-rebinding domain read and wrote,
    /// because the cross-site guard trusts `Origin == Host`. Only hosts of
    /// `--allowed-hosts` are answered, on the API, the console and the gateway; probes are not concerned.
    @Test func aRebindingPagesRequestsAreNotAnswered() async throws {
        let server = try await Self.server.get().server
        let body = #"{"key":"rebound","name":"n"}"#
        let write = try WebSocketClient.rawRequest(
            port: server.port,
            """
            POST /api/v1/spaces HTTP/1.1\r\nHost: rebind.evil.example:\(server.port)\r\n\
            Origin: http://rebind.evil.example:\(server.port)\r\n\
            Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)
            """)
        #expect(write.hasPrefix("HTTP/1.1 421"), "\(write.prefix(200))")
        #expect(write.contains("host_not_allowed"))
        for path in ["/api/v1/spaces", "/console"] {
            let read = try WebSocketClient.rawRequest(
                port: server.port, "GET \(path) HTTP/1.1\r\nHost: rebind.evil.example\r\nConnection: close\r\n\r\n")
            #expect(read.hasPrefix("HTTP/1.1 421"), "\(path)")
        }
        let probe = try WebSocketClient.rawRequest(
            port: server.port, "GET /healthz HTTP/1.1\r\nHost: 10.1.2.3:8080\r\nConnection: close\r\n\r\n")
        #expect(probe.hasPrefix("HTTP/1.1 200"))
        let upgrade = try WebSocketClient.rawRequest(
            port: server.wsPort,
            """
            GET /api/v1/ws HTTP/1.1\r\nHost: rebind.evil.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
            Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
            Origin: http://rebind.evil.example\r\n\r\n
            """)
        #expect(upgrade.hasPrefix("HTTP/1.1 421"), "\(upgrade.prefix(200))")
        let written = try await server.client.get("/api/v1/spaces?key=rebound").json.array
        #expect(written?.isEmpty == true, "nothing was written")
    }

    @Test func aTrustedProxyNamesTheClientAndNobodyElseCan() async throws {
        let server = try await Self.server.get().server
        // The test talks from 127.0.0.1, listed as a proxy: its X-Forwarded-For is believed,
        // and of a forged chain only the hop the proxy appended counts.
        let reply = try await server.client.post(
            "/api/v1/spaces", ["key": .string("fwd-\(UUID())"), "name": "n"],
            headers: ["X-Forwarded-For": "6.6.6.6, 203.0.113.9", "X-Request-Id": "<b>x</b>"])
        #expect(reply.status == 201)
        #expect(reply.header("X-Request-Id") != "<b>x</b>", "an id with unsafe characters is replaced")
        let id = try #require(reply.json["id"]?.string)
        let audit = try await server.client.get("/api/v1/audit?space_id=\(id)")
        let entry = try #require(audit.json["data"]?.array?.first)
        #expect(entry["client"]?["address"] == "203.0.113.9")
    }

    @Test func anUntrustedPeersForwardedForIsIgnored() async throws {
        let server = try await LazyServer("browsers_untrusted").get().server
        let reply = try await server.client.post(
            "/api/v1/spaces", ["key": .string("fwd-\(UUID())"), "name": "n"],
            headers: ["X-Forwarded-For": "203.0.113.9", "X-Request-Id": "trace-01:ab/cd+e="])
        #expect(reply.header("X-Request-Id") == "trace-01:ab/cd+e=")
        let id = try #require(reply.json["id"]?.string)
        let audit = try await server.client.get("/api/v1/audit?space_id=\(id)")
        let entry = try #require(audit.json["data"]?.array?.first)
        #expect(entry["client"]?["address"] == "127.0.0.1")
        await server.terminate()
    }
}
