import Foundation
import Glibc
import Testing

/// The HTTP port's connection caps and the limit on refused tokens, over real sockets
/// from several loopback addresses (docs/security.md, "Fair share between tenants").
@Suite struct ConnectionFloodTests {
    /// Whether the server closed `socket` (a read of 0 bytes) within `seconds`.
    static func closedByServer(_ socket: Int32, within seconds: Int32 = 5) -> Bool {
        WebSocketClient.readUntilClosed(socket, seconds: seconds).closed
    }

    /// Issue 45: about 21,500 incomplete request heads from five addresses, no token
    /// needed, took the server to its descriptor limit and `/readyz` stopped answering.
    /// Past either cap a connection is closed at once; the ops port still answers.
    @Test func connectionsPastTheCapsAreClosedAtOnceAndTheOpsPortAnswers() async throws {
        let opsPort = try FreePort.pick()
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("connection_caps"),
            extraArguments: [
                "--http-max-connections", "8", "--http-max-connections-per-client", "5",
                "--ops-port", String(opsPort),
            ]
        )
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        let head = Array("GET /api/v1/spaces HTTP/1.1\r\nHost: localhost\r\nX-Slow: ".utf8)
        func open(from source: String) throws -> Int32 {
            let socket = try Loopback.connect(port: server.port, from: source)
            _ = head.withUnsafeBytes { write(socket, $0.baseAddress, $0.count) }
            return socket
        }
        // The test's own HTTP client may keep a connection or two from 127.0.0.1 open: the
        // counts below are read on the ops port, and the process's cap is found by filling it.
        let ops = HTTPClient(base: URL(string: "http://127.0.0.1:\(opsPort)")!)
        func held() async throws -> Int {
            let scrape = String(decoding: try await ops.get("/metrics").body, as: UTF8.self)
            let line = scrape.split(separator: "\n").first { $0.hasPrefix("roboscope_http_connections ") }
            return Int(Double(line?.split(separator: " ").last ?? "") ?? -1)
        }
        let before = try await held()
        #expect(before <= 2)
        for _ in 0..<5 { sockets.append(try open(from: "127.0.0.2")) }
        // At least ours (the client's own may come and go meanwhile).
        try await eventually("five more connections are held", within: 20) { try await held() >= 5 }
        let sixth = try open(from: "127.0.0.2")
        defer { close(sixth) }
        #expect(Self.closedByServer(sixth), "one address holds at most 5")
        var refusedAt: Int?
        for attempt in 0..<8 {
            let socket = try open(from: "127.0.0.3")
            if Self.closedByServer(socket, within: 1) {
                close(socket)
                refusedAt = attempt
                break
            }
            sockets.append(socket)
        }
        #expect(refusedAt != nil, "the process holds at most 8")
        #expect(try await held() <= 8, "never more than 8")
        // Probes and scrapes go to the ops port, which no client flood reaches.
        #expect(try await ops.get("/readyz").status == 200)
        let scrape = String(decoding: try await ops.get("/metrics").body, as: UTF8.self)
        #expect(scrape.contains(#"roboscope_http_connections_refused_total{limit="client"} 1"#))
        #expect(scrape.contains(#"roboscope_http_connections_refused_total{limit="process"} 1"#))
        #expect(try await ops.get("/api/v1/spaces").status == 404, "the ops port serves probes only")
        // Places come back as connections go.
        sockets.forEach { close($0) }
        sockets = []
        try await eventually("the caps let new connections in", within: 10) {
            (try? await server.client.get("/api/v1/spaces"))?.status == 200
        }
        await server.terminate()
    }

    /// Issue 45: with authentication on, requests with bad signatures were never limited
    /// (about 4,000 a second on one connection burnt a core). Refused tokens count per
    /// address, before verification: past the limit 429 without checking the token.
    @Test func refusedTokensAreLimitedPerAddressBeforeVerification() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("refused_tokens"),
            extraArguments: Tokens.serverArguments() + ["--unauthenticated-rate-limit", "0.05"]
        )
        let claims: [String: Any] = ["sub": "x", "tenant": "acme", "exp": Date().timeIntervalSince1970 + 60]
        let forged = Tokens.bearer(try Tokens.jwt(claims, secret: "another-secret-that-is-long-enough-0123456789"))
        var statuses: [Int] = []
        for _ in 0..<4 {
            statuses.append(try await server.client.send("GET", "/api/v1/spaces", headers: forged).status)
        }
        #expect(statuses == [401, 429, 429, 429], "a burst of one (twice 0.05), then refused before verification")
        let refused = try await server.client.send("GET", "/api/v1/spaces", headers: forged)
        #expect(refused.json["error"]?["code"] == "rate_limited")
        #expect(Int(refused.header("Retry-After") ?? "") ?? 0 > 1)
        await server.terminate()
    }
}
