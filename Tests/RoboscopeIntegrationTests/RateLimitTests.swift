import Foundation
import Testing
import RoboscopeDomain

/// Per-client rate limit: a burst passes, the rest is 429 with Retry-After, tokens refill.
@Suite(.serialized) struct RateLimitTests {
    @Test func pastTheBurstRequestsAre429UntilTokensRefill() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("ratelimit"), extraArguments: ["--rate-limit", "0.2", "--rate-burst", "3"]
        )
        var statuses: [Int] = []
        var refused: HTTPClient.Reply?
        // One token per 5 s: even a slow, busy machine sends these faster than they refill.
        for _ in 0..<8 {
            let reply = try await server.client.get("/api/v1/spaces")
            statuses.append(reply.status)
            if reply.status == 429 { refused = reply }
        }
        #expect(statuses.prefix(3).allSatisfy { $0 == 200 })
        #expect(statuses.filter { $0 == 429 }.count >= 3)
        #expect(refused?.json["error"]?["code"] == "rate_limited")
        let wait = Int(refused?.header("Retry-After") ?? "") ?? 0
        #expect((1...5).contains(wait))
        // Probes are not limited.
        #expect(try await server.client.get("/healthz").status == 200)
        // A token comes back after Retry-After: the limit lifts by itself.
        try await eventually("a token refills", within: Double(wait) + 10) {
            try await server.client.get("/api/v1/spaces").status == 200
        }
        #expect(await server.terminate() == 0)
    }
}
