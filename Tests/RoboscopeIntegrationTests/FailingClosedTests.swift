import Foundation
import Testing

/// docs/security.md, "Failing closed", against the real binary: the settings it refuses to
/// start with, and tokens whose claims cannot be read, which are 401 and never a crash
/// (issue 45: `exp: 1e13` took the whole process down, `exp: 9223372036852` the upgrade).
@Suite struct FailingClosedTests {
    static let shared = LazyServer("failing_closed") {
        [
            "--auth-jwt-secret", Tokens.secret, "--auth-audience", "roboscope-tests",
            "--auth-issuer", "https://id.tests.invalid/",
        ]
    }

    static func claims(exp: Any) -> [String: Any] {
        [
            "sub": "ana", "tenant": "acme", "scope": "read", "exp": exp, "aud": "roboscope-tests",
            "iss": "https://id.tests.invalid/",
        ]
    }

    /// The refusal `serve` prints for `arguments`; it must not start (it exits non-zero
    /// before it touches a database, so the URL below is never dialled).
    func refusal(_ arguments: [String]) async throws -> String {
        let outcome = try await CommandRunner.roboscope(
            ["serve", "--database-url", "postgres://nobody@127.0.0.1:1/none", "--no-migrate"] + arguments)
        #expect(outcome.status != 0, "serve started with \(arguments)")
        return outcome.output
    }

    @Test func serveRefusesToStartWithWeakOrAmbiguousAuthentication() async throws {
        let placeholder = "change-me-to-at-least-32-random-bytes-of-secret"
        for secret in [placeholder + "\n", placeholder.uppercased(), "  " + placeholder] {
            #expect(
                try await refusal(Tokens.serverArguments(secret: secret)).contains("placeholder"),
                "\(secret.debugDescription)")
        }
        let repetitive = String(repeating: "abcdefgh", count: 8)
        #expect(try await refusal(Tokens.serverArguments(secret: repetitive)).contains("fewer than 16 distinct bytes"))
        #expect(try await refusal(["--auth-jwt-secret", "short-secret"]).contains("at least 32 bytes"))
        #expect(
            try await refusal(["--auth-jwt-secret", Tokens.secret, "--auth-issuer", "https://id.example.com/"])
                .contains("--auth-audience is required"))
        #expect(
            try await refusal(["--auth-jwt-secret", Tokens.secret, "--auth-audience", "roboscope"])
                .contains("--auth-issuer is required"))
        let plainKeySet = [
            "--auth-jwks-url", "http://id.example.com/jwks.json",
            "--auth-audience", "a", "--auth-issuer", "b",
        ]
        #expect(try await refusal(plainKeySet).contains("must be an https:// URL"))
        #expect(try await refusal(["--auth-jwt-secret", ""]).contains("is empty"))
    }

    @Test func datesBeyondTheYear9999Are401AndTheProcessLivesOn() async throws {
        let server = try await Self.shared.get().server
        for exp in [1e13, 9_223_372_036_852.0] {
            let token = try Tokens.jwt(Self.claims(exp: exp))
            let reply = try await server.client.send("GET", "/api/v1/spaces", headers: Tokens.bearer(token))
            #expect(reply.status == 401, "exp \(exp)")
            #expect(String(decoding: reply.body, as: UTF8.self).contains("token exp is outside"))
            let upgrade = try WebSocketClient.rawRequest(
                port: server.wsPort,
                """
                GET /api/v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
                Authorization: Bearer \(token)\r\n\r\n
                """)
            #expect(upgrade.hasPrefix("HTTP/1.1 401 "), "exp \(exp)")
        }
        #expect(try await server.client.send("GET", "/healthz").status == 200)
        // The right audience and issuer pass; another audience does not.
        let good = try Tokens.jwt(Self.claims(exp: Date().timeIntervalSince1970 + 300))
        #expect(try await server.client.send("GET", "/api/v1/spaces", headers: Tokens.bearer(good)).status == 200)
        var elsewhere = Self.claims(exp: Date().timeIntervalSince1970 + 300)
        elsewhere["aud"] = "another-service"
        let otherAudience = Tokens.bearer(try Tokens.jwt(elsewhere))
        #expect(try await server.client.send("GET", "/api/v1/spaces", headers: otherAudience).status == 401)
    }

    @Test func allowingAnyAudienceOrIssuerIsWarnedAtStart() async throws {
        let server = try await TenancyMatrixTests.shared.get().server
        let log = server.log()
        #expect(log.contains("whatever their aud"))
        #expect(log.contains("whatever their iss"))
    }
}
