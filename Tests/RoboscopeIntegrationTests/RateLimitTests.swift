import Foundation
import Testing
import RoboscopeDomain

/// Per-client rate limit: a burst passes, the rest is 429 with Retry-After, tokens refill.
@Suite(.serialized) struct RateLimitTests {
    @Test func pastTheBurstRequestsAre429UntilTokensRefill() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("ratelimit"),
            extraArguments: ["--rate-limit", "0.1", "--rate-burst", "3"]
        )
        var statuses: [Int] = []
        var refused: HTTPClient.Reply?
        // One token per 10 s: even a slow, busy machine sends these faster than they refill
        // (one token per 5 s was outrun by a loaded clean-clone run).
        for _ in 0..<8 {
            let reply = try await server.client.get("/api/v1/spaces")
            statuses.append(reply.status)
            if reply.status == 429 { refused = reply }
        }
        #expect(statuses.prefix(3).allSatisfy { $0 == 200 })
        #expect(statuses.filter { $0 == 429 }.count >= 3)
        #expect(refused?.json["error"]?["code"] == "rate_limited")
        let wait = Int(refused?.header("Retry-After") ?? "") ?? 0
        #expect((1...10).contains(wait))
        // Probes are not limited.
        #expect(try await server.client.get("/healthz").status == 200)
        // A token comes back after Retry-After: the limit lifts by itself. The wait is
        // generous (one loaded clean-clone run saw no 200 within Retry-After + 10 s), and
        // its answers are kept, so that a miss says what came back instead.
        var answers: [Int: Int] = [:]
        do {
            try await eventually("a token refills", within: Double(wait) + 30) {
                let status = try await server.client.get("/api/v1/spaces").status
                answers[status, default: 0] += 1
                return status == 200
            }
        } catch {
            Issue.record(
                """
                no 200 within Retry-After (\(wait) s) + 30 s; answers by status: \(answers); server log: \
                \(server.log())
                """
            )
        }
        #expect(await server.terminate() == 0)
    }

    @Test func withTokensTheLimitsArePerSubjectAndPerTenant() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("ratelimit_subject"),
            extraArguments: Tokens.serverArguments()
                + ["--rate-limit", "0.1", "--rate-burst", "2", "--tenant-rate-limit", "1000"]
        )
        let ana = Tokens.bearer(try Tokens.token("acme", "read", sub: "ana"))
        let bo = Tokens.bearer(try Tokens.token("acme", "read", sub: "bo"))
        let statuses = try await (0..<3).asyncMap { _ in
            try await server.client.send("GET", "/api/v1/spaces", headers: ana)
        }
        #expect(statuses.map(\.status) == [200, 200, 429])
        #expect(statuses[2].json["error"]?["limit"] == "subject")
        #expect(
            try await server.client.send("GET", "/api/v1/spaces", headers: bo).status == 200,
            "another subject has its own bucket")
        await server.terminate()

        let tenantBound = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("ratelimit_tenant"),
            extraArguments: Tokens.serverArguments() + ["--rate-limit", "1000", "--tenant-rate-limit", "0.1"]
        )
        #expect(try await tenantBound.client.send("GET", "/api/v1/spaces", headers: ana).status == 200)
        let refused = try await tenantBound.client.send("GET", "/api/v1/spaces", headers: bo)
        #expect(refused.status == 429, "the tenant's one token is spent, whoever spends it")
        #expect(refused.json["error"]?["limit"] == "tenant")
        let globex = Tokens.bearer(try Tokens.token("globex", "read", sub: "cy"))
        #expect(try await tenantBound.client.send("GET", "/api/v1/spaces", headers: globex).status == 200)
        let scrape = String(decoding: try await tenantBound.client.get("/metrics").body, as: UTF8.self)
        #expect(scrape.contains(#"roboscope_rate_limited_total{limit="tenant"} 1"#))
        await tenantBound.terminate()
    }

    @Test func aBulkCostsItsMarkers() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("ratelimit_bulk"),
            extraArguments: ["--rate-limit", "0.1", "--rate-burst", "10"]
        )
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let quad = JSONValue.object(Fixtures.markerFields(in: session))
        // Three requests so far; the bulk takes its token, then is charged 19 more (its 20 markers).
        let bulk = try await server.client.post(
            "/api/v1/markers/bulk", ["markers": .array(Array(repeating: quad, count: 20))])
        #expect(bulk.status == 201)
        let next = try await server.client.get("/api/v1/spaces")
        #expect(next.status == 429, "the bulk spent what 20 creates would")
        #expect(next.json["error"]?["limit"] == "address")
        await server.terminate()
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
