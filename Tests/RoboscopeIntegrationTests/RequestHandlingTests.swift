import Foundation
import Testing
import RoboscopeDomain

@Suite struct RequestHandlingTests {
    @Test func malformedJSONIs400() async throws {
        let client = try await SharedServer.client()
        for body in ["{", "{\"key\": }", "nul", "\u{FF}\u{FE}"] {
            let reply = try await client.send("POST", "/api/v1/spaces", body: Data(body.utf8))
            #expect(reply.status == 400, "\(body)")
            #expect(reply.json["error"]?["code"] == "malformed_request")
        }
        let empty = try await client.send("POST", "/api/v1/markers", body: Data())
        #expect(empty.status == 400)
    }

    @Test func oversizedBodyIs413() async throws {
        let client = try await SharedServer.client()
        let padding = String(repeating: "x", count: (1 << 20) + 10)
        let reply = try await client.send(
            "POST", "/api/v1/spaces", body: Data("{\"key\":\"k\",\"name\":\"\(padding)\"}".utf8))
        #expect(reply.status == 413)
        #expect(reply.json["error"]?["code"] == "payload_too_large")
    }

    /// No browser sniffs an answer into HTML, and no other site frames the console.
    @Test func answersSayNoSniffingAndTheConsoleRefusesFrames() async throws {
        let client = try await SharedServer.client()
        for path in ["/api/v1/spaces", "/api/v1/spaces/not-a-uuid", "/healthz", "/api/v1/nowhere"] {
            #expect(try await client.get(path).header("X-Content-Type-Options") == "nosniff", "\(path)")
        }
        let console = try await client.get("/console")
        #expect(console.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true)
    }

    @Test func unknownRouteIsJSON404() async throws {
        let client = try await SharedServer.client()
        let reply = try await client.get("/api/v1/nothing-here")
        #expect(reply.status == 404)
        #expect(reply.json["error"]?["code"] == "not_found")
    }

    @Test func healthEndpoints() async throws {
        let client = try await SharedServer.client()
        #expect(try await client.get("/healthz").status == 200)
        #expect(try await client.get("/readyz").status == 200)
    }

    @Test func requestIDIsEchoed() async throws {
        let client = try await SharedServer.client()
        let reply = try await client.send("GET", "/healthz", headers: ["X-Request-Id": "trace-abc-123"])
        #expect(reply.header("X-Request-Id") == "trace-abc-123")
    }
}
