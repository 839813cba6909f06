import Foundation
import Testing
import RoboscopeDomain
import WebSocketCodec

/// `--tenant-plans-file` (docs/operations.md, "Running many customers"): a tenant's limits
/// are its plan's, field by field, else the default plan's, else the flags'; the file is
/// re-read when it changes.
@Suite(.serialized) struct TenantPlansTests {
    static func write(_ plans: [String: Any], to file: URL) throws {
        try JSONSerialization.data(withJSONObject: plans).write(to: file, options: .atomic)
    }

    @Test func eachTenantGetsItsPlansRateConnectionsAndLongPolls() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("plans-\(UUID()).json")
        try Self.write(
            [
                "default": ["rate_limit": 0.5, "max_connections": 2, "max_long_polls": 1],
                "tenants": ["gold": ["rate_limit": 500, "max_connections": 10], "poll": ["rate_limit": 500]],
            ],
            to: file)
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("tenant_plans"),
            extraArguments: Tokens.serverArguments() + ["--tenant-plans-file", file.path])
        // Rate: basic's burst is 1 (one more every 2 s), gold's 1,000. The twelve requests go
        // at once: sent one after another, a CI run whose every suite ran together answered
        // each in more than the 2 s that refill the bucket, and none was refused.
        func limited(_ tenant: String) async throws -> [HTTPClient.Reply] {
            try await withThrowingTaskGroup(of: HTTPClient.Reply.self) { group in
                for index in 0..<12 {
                    let token = Tokens.bearer(try Tokens.token(tenant, "read", sub: "s\(index)"))
                    group.addTask { try await server.client.send("GET", "/api/v1/spaces", headers: token) }
                }
                return try await group.reduce(into: []) { refused, reply in
                    if reply.status == 429 { refused.append(reply) }
                }
            }
        }
        let basicRefused = try await limited("basic")
        #expect(!basicRefused.isEmpty && basicRefused.allSatisfy { $0.json["error"]?["limit"] == "tenant" })
        #expect(try await limited("gold").isEmpty)

        // Connections: two for basic (the default plan), the third refused at the upgrade or
        // at its `auth` op; gold holds more.
        let basic = try Tokens.token("basic", "read")
        let held = try (0..<2).map { _ in
            try WebSocketClient(port: server.wsPort, headers: ["Authorization: Bearer \(basic)"])
        }
        #expect(throws: TestFailure.self) {
            _ = try WebSocketClient(port: server.wsPort, headers: ["Authorization: Bearer \(basic)"])
        }
        let late = try WebSocketClient(port: server.wsPort)
        try late.send(["op": "auth", "token": .string(basic)])
        #expect(try await late.closeFrame()?.code == .tryAgainLater)
        let gold = try Tokens.token("gold", "read")
        let goldHeld = try (0..<4).map { _ in
            try WebSocketClient(port: server.wsPort, headers: ["Authorization: Bearer \(gold)"])
        }

        // Long polls: the default plan's one waiting for a tenant whose own plan sets only its
        // rate; the second is 429.
        let admin = Tokens.bearer(try Tokens.token("poll", "admin", sub: "poller"))
        let space = try await server.client.send(
            "POST", "/api/v1/spaces", json: ["key": "p", "name": "n"], headers: admin)
        let session = try await server.client.send(
            "POST", "/api/v1/work-sessions",
            json: ["space_id": space.json["id"]!, "session_type": "inspection"], headers: admin)
        let topic = "work_session:\(session.json["id"]!.string!)"
        let head = try await server.client.send("GET", "/api/v1/changes?topic=\(topic)&since=0", headers: admin).json[
            "next_since"]!.int!
        let poll = "/api/v1/changes?topic=\(topic)&since=\(head)&wait=20"
        let first = Task { try await server.client.send("GET", poll, headers: admin) }
        try await eventually("the first poll waits", within: 10) {
            try await server.metric("roboscope_changes_waiting") == 1
        }
        let second = try await server.client.send("GET", poll, headers: admin)
        #expect(second.status == 429 && second.json["error"]?["limit"] == "tenant", "\(second.json)")
        first.cancel()

        // The file changes: basic may hold a third connection now.
        try Self.write(
            ["default": ["rate_limit": 0.5, "max_connections": 3], "tenants": [:] as [String: Any]], to: file)
        try await eventually("the new plan is in force", within: 10) {
            (try? WebSocketClient(port: server.wsPort, headers: ["Authorization: Bearer \(basic)"])) != nil
        }
        _ = (held, goldHeld)
        #expect(await server.terminate() == 0)
    }

    @Test func aPlansFileThatDoesNotParseRefusesTheStart() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("plans-\(UUID()).json")
        for (plans, message) in [
            (["default": ["rate_limt": 5]] as [String: Any], "default.rate_limt: unknown field"),
            (["tenants": ["acme": ["db_share": 2]]], "tenants.acme.db_share"),
            (["tenants": ["acme": ["max_connections": 0.5]]], "tenants.acme.max_connections"),
        ] {
            try Self.write(plans, to: file)
            let outcome = try await CommandRunner.roboscope([
                "serve", "--tenant-plans-file", file.path,
                "--database-url", "postgres://unused/none",
            ])
            #expect(outcome.status != 0 && outcome.output.contains(message), "\(message): \(outcome.output)")
        }
    }
}
