import Crypto
import Foundation
import Testing
import RoboscopeDomain
import WebSocketCodec

/// Bearer tokens on: HS256 JWTs and static API tokens, on HTTP and on the WebSocket upgrade.
@Suite(.serialized) struct AuthenticationTests {
    static let secret = "a-test-secret-that-is-long-enough-0123456789"

    static let shared = LazyServer("auth") {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("roboscope-tokens-\(UUID()).json")
        try Data(
            """
            [{"token": "static-writer-token", "subject": "robot-arm-3", "tenant": "acme", "scope": "admin"},
             {"token": "static-reader-token", "subject": "dashboard", "tenant": "acme", "scope": "read audit"}]
            """.utf8
        ).write(to: file)
        return Tokens.serverArguments(secret: AuthenticationTests.secret) + ["--auth-tokens-file", file.path]
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func jwt(_ claims: [String: Any], secret: String = secret, alg: String = "HS256") throws -> String {
        let header = base64URL(try JSONSerialization.data(withJSONObject: ["alg": alg, "typ": "JWT"]))
        let payload = base64URL(try JSONSerialization.data(withJSONObject: claims))
        let signature = HMAC<SHA256>.authenticationCode(
            for: Data("\(header).\(payload)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return "\(header).\(payload).\(base64URL(Data(signature)))"
    }

    static func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer \(token)"] }

    func createSpace(_ server: ServerProcess, _ headers: [String: String]) async throws -> HTTPClient.Reply {
        let body = try JSONSerialization.data(withJSONObject: ["key": Fixtures.uniqueKey(), "name": "n"])
        var all = headers
        all["Content-Type"] = "application/json"
        return try await server.client.send("POST", "/api/v1/spaces", body: body, headers: all)
    }

    @Test func requestsWithoutAValidTokenAre401() async throws {
        let server = try await Self.shared.get().server
        let missing = try await server.client.get("/api/v1/spaces")
        #expect(missing.status == 401)
        #expect(missing.header("WWW-Authenticate") == "Bearer")
        #expect(missing.json["error"]?["code"] == "unauthorized")
        let now = Date().timeIntervalSince1970
        for token in [
            try Self.jwt(["sub": "x", "exp": now + 60], secret: "another-secret-that-is-long-enough-0123456789"),
            try Self.jwt(["sub": "x", "tenant": "acme", "exp": now - 120]),
            try Self.jwt(["sub": "x", "tenant": "acme", "exp": now + 300, "nbf": now + 600]),
            try Self.jwt(["tenant": "acme", "exp": now + 60]),
            try Self.jwt(["sub": "x", "tenant": "acme"]),
            try Self.jwt(["sub": "x", "exp": now + 60]),
            try Self.jwt(["sub": "x", "tenant": String(repeating: "t", count: 300), "exp": now + 60]),
            try Self.jwt(["sub": "x", "tenant": "acme", "exp": now + 60, "spaces": ["not-a-uuid"]]),
            try Self.jwt(["sub": "x", "tenant": "acme", "exp": now + 60], alg: "none"),
            String(repeating: "a", count: 9000),
            "not-a-token",
        ] {
            let reply = try await server.client.send("GET", "/api/v1/spaces", headers: Self.bearer(token))
            #expect(reply.status == 401, "\(token): \(reply.json)")
        }
        #expect(
            try await server.client.send("GET", "/api/v1/spaces", headers: ["Authorization": "Basic eDp5"]).status
                == 401)
        // Health and metrics stay open for probes and scrapers.
        #expect(try await server.client.get("/healthz").status == 200)
        #expect(try await server.client.get("/metrics").status == 200)
    }

    @Test func theTokensSubjectIsTheActorWhateverXUserIdSays() async throws {
        let server = try await Self.shared.get().server
        let token = try Self.jwt([
            "sub": "inspector-7", "tenant": "acme", "scope": "admin audit", "exp": Date().timeIntervalSince1970 + 300,
        ])
        var headers = Self.bearer(token)
        headers["X-User-Id"] = "mallory"
        let created = try await createSpace(server, headers)
        #expect(created.status == 201)
        let history = try await server.client.send(
            "GET", "/api/v1/spaces/\(Fixtures.id(created.json))/history", headers: Self.bearer(token))
        #expect(history.json["data"]?[0]?["actor"] == "inspector-7")

        let robot = try await createSpace(server, Self.bearer("static-writer-token"))
        #expect(robot.status == 201)
        let robotHistory = try await server.client.send(
            "GET", "/api/v1/spaces/\(Fixtures.id(robot.json))/history",
            headers: Self.bearer("static-reader-token"))
        #expect(robotHistory.json["data"]?[0]?["actor"] == "robot-arm-3")
    }

    @Test func readOnlyTokensReadButCannotWrite() async throws {
        let server = try await Self.shared.get().server
        for token in [
            "static-reader-token",
            try Self.jwt([
                "sub": "auditor", "tenant": "acme", "scope": "read", "exp": Date().timeIntervalSince1970 + 300,
            ]),
        ] {
            #expect(try await server.client.send("GET", "/api/v1/spaces", headers: Self.bearer(token)).status == 200)
            let write = try await createSpace(server, Self.bearer(token))
            #expect(write.status == 403)
            #expect(write.json["error"]?["code"] == "forbidden")
        }
    }

    @Test func theWebSocketNeedsAValidTokenAtTheUpgradeOrInItsFirstMessage() async throws {
        let server = try await Self.shared.get().server
        let refused = try WebSocketClient.rawRequest(
            port: server.wsPort,
            """
            GET /api/v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
            Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
            Authorization: Bearer nonsense\r\n\r\n
            """)
        #expect(refused.hasPrefix("HTTP/1.1 401 "))
        #expect(refused.contains("WWW-Authenticate: Bearer"))
        let socket = try WebSocketClient(port: server.wsPort, headers: ["Authorization: Bearer static-reader-token"])
        try socket.send(["op": "dance"])
        #expect(try await socket.nextJSON()["code"] == "unknown_op")
        // Without the header (a browser): only the auth op is served.
        let browser = try WebSocketClient(port: server.wsPort)
        try browser.send(["op": "dance"])
        #expect(try await browser.closeFrame()?.code == .unauthorized)
    }
}
