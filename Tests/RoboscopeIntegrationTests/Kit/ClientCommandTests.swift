import Foundation
import Testing
import RoboscopeDomain

/// `roboscope-client` as an operator or a script uses it (docs/client-kit.md): reads
/// (`get`, `presence`, `lock`), the server's refusals passed on whole with exit 2, a token
/// read from a file at each request, refused tokens said on standard error, and `watch`
/// giving up with exit 3; the kit's `User-Agent` lands in the audit trail as the device.
@Suite(.serialized) struct ClientCommandTests {
    static let shared = LazyServer("client_command") { Tokens.serverArguments() + ["--auth-leeway", "0"] }

    func run(_ arguments: [String]) async throws -> (status: Int32, out: [String], err: [String]) {
        let client = try ClientProcess(arguments)
        client.closeInput()
        let status = await client.process.exitStatus()
        try await eventually("the output is collected", within: 10) { client.hasEnded }
        return (status, client.lines, client.errorLines)
    }

    @Test func readsAnswerTheServersJSONAndRefusalsExitTwoWithTheBodyWhole() async throws {
        let server = try await Self.shared.get().server
        let url = "http://127.0.0.1:\(server.port)"
        let tenant = "cli-\(UUID().uuidString.prefix(6).lowercased())"
        let admin = try Tokens.token(tenant, "admin", sub: "cli-admin")
        let space = try await server.client.send(
            "POST", "/api/v1/spaces", json: ["key": "k", "name": "Hull"], headers: Tokens.bearer(admin))
        let spaceID = try #require(space.json["id"]?.string)
        let session = try await server.client.send(
            "POST", "/api/v1/work-sessions",
            json: ["space_id": .string(spaceID), "session_type": "inspection"],
            headers: Tokens.bearer(admin))
        let sessionID = try #require(session.json["id"]?.string)

        let got = try await run(["get", "--url", url, "--token", admin, "/spaces/\(spaceID)"])
        #expect(got.status == 0 && got.out.count == 1 && got.out[0].contains("\"name\":\"Hull\""), "\(got)")
        let list = try await run(["get", "--url", url, "--token", admin, "spaces?limit=5"])
        #expect(list.status == 0 && list.out.first?.contains(spaceID) == true)
        let missing = try await run(["get", "--url", url, "--token", admin, "/spaces/\(UUID())"])
        #expect(missing.status == 2 && missing.out.isEmpty)
        #expect(
            missing.err.contains { $0.contains("\"code\":\"not_found\"") && $0.contains("\"request_id\"") },
            "\(missing.err)")

        let presence = try await run(["presence", "--url", url, "--token", admin, sessionID])
        #expect(presence.status == 0 && presence.out.first?.contains("\"users\"") == true, "\(presence)")
        let lock = try await run(["lock", "--url", url, "--token", admin, sessionID])
        #expect(lock.status == 0 && lock.out.first?.contains("\"locked\":false") == true, "\(lock)")

        // A refused token: a line naming the server's code, and exit 2.
        let expired = try Tokens.jwt([
            "sub": "x", "tenant": tenant, "scope": "read", "exp": Date().timeIntervalSince1970 - 5,
        ])
        let refused = try await run(["get", "--url", url, "--token", expired, "/spaces"])
        #expect(refused.status == 2)
        #expect(
            refused.err.contains { $0.contains("refused the token (401 unauthorized)") && $0.contains("expired") },
            "\(refused.err)")

        // apply: every answer printed as the server wrote it (code, field, scope_needed,
        // request_id), exit 2 when any was refused.
        let reader = try Tokens.token(tenant, "read", sub: "reader")
        let apply = try ClientProcess([
            "apply", "--url", url, "--token", reader, "--state", ClientKitEndToEndTests.newState(),
        ])
        apply.write("{\"method\":\"POST\",\"path\":\"/spaces\",\"body\":{\"key\":\"x\",\"name\":\"n\"}}\n")
        apply.closeInput()
        #expect(await apply.process.exitStatus() == 2)
        try await eventually("the answer is printed", within: 5) { !apply.lines.isEmpty }
        let answer = try JSONParser.parse(Data(apply.lines[0].utf8))
        #expect(answer["status"] == 403 && answer["body"]?["error"]?["code"] == "forbidden")
        #expect(answer["body"]?["error"]?["scope_needed"] == "admin" && answer["body"]?["error"]?["request_id"] != nil)
    }

    @Test func aTokenFileIsReadAgainAndTheKitNamesItselfInTheAuditTrail() async throws {
        let server = try await Self.shared.get().server
        let url = "http://127.0.0.1:\(server.port)"
        let tenant = "cli-\(UUID().uuidString.prefix(6).lowercased())"
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("token-\(UUID())")
        try Data("bad-token\n".utf8).write(to: file)
        #expect(try await run(["get", "--url", url, "--token-file", file.path, "/spaces"]).status == 2)
        try Data((try Tokens.token(tenant, "admin audit", sub: "filer") + "\n").utf8).write(to: file)
        let apply = try ClientProcess([
            "apply", "--url", url, "--token-file", file.path, "--state", ClientKitEndToEndTests.newState(),
        ])
        apply.write("{\"method\":\"POST\",\"path\":\"/spaces\",\"body\":{\"key\":\"y\",\"name\":\"n\"}}\n")
        apply.closeInput()
        #expect(await apply.process.exitStatus() == 0)
        let audit = try await server.client.send(
            "GET", "/api/v1/audit?actor=filer",
            headers: Tokens.bearer(try Tokens.token(tenant, "audit", sub: "auditor")))
        let device = audit.json["data"]?[0]?["client"]?["user_agent"]?.string
        #expect(
            device?.hasPrefix("RoboscopeKit/") == true && device?.hasSuffix("; roboscope-client)") == true,
            "\(audit.json)")
    }

    /// `watch --presence`: who is present, whenever that changes, between the topic's events.
    @Test func watchWithPresencePrintsWhoIsThere() async throws {
        let server = try await Self.shared.get().server
        let url = "http://127.0.0.1:\(server.port)"
        let tenant = "cli-\(UUID().uuidString.prefix(6).lowercased())"
        let admin = Tokens.bearer(try Tokens.token(tenant, "admin", sub: "cli-admin"))
        let space = try await server.client.send(
            "POST", "/api/v1/spaces", json: ["key": "k", "name": "n"], headers: admin)
        let session = try await server.client.send(
            "POST", "/api/v1/work-sessions", json: ["space_id": space.json["id"]!, "session_type": "inspection"],
            headers: admin)
        let sessionID = try #require(session.json["id"]?.string)
        let watch = try ClientProcess([
            "watch", "--url", url, "--token", try Tokens.token(tenant, "read", sub: "watcher"),
            "--topic", "work_session:\(sessionID)", "--presence",
        ])
        defer { watch.process.terminate() }
        let fitter = Tokens.bearer(try Tokens.token(tenant, "write", sub: "fitter"))
        try await eventually("the watcher hears the fitter arrive", within: 15) {
            _ = try await server.client.send("POST", "/api/v1/presence/\(sessionID)", json: [:], headers: fitter)
            return watch.lines.contains { $0.contains("\"op\":\"presence\"") && $0.contains("\"fitter\"") }
        }
        let marker = try await server.client.send(
            "POST", "/api/v1/markers",
            json: Fixtures.markerBody(session: sessionID), headers: fitter)
        let markerID = try #require(marker.json["id"]?.string)
        try await eventually("and the marker's event", within: 10) { watch.lines.contains { $0.contains(markerID) } }
        #expect(await watch.stop() == 0)
    }

    @Test func watchSaysEachRefusedTokenAndGivesUpWithExitThree() async throws {
        let server = try await Self.shared.get().server
        let url = "http://127.0.0.1:\(server.port)"
        let revoked = try Tokens.jwt([
            "sub": "w", "tenant": "cli-watch", "scope": "read", "exp": Date().timeIntervalSince1970 - 5,
        ])
        let watch = try ClientProcess([
            "watch", "--url", url, "--token", revoked, "--topic", "space:\(UUID())",
            "--max-auth-failures", "2",
        ])
        let status = await watch.process.exitStatus()
        #expect(status == 3)
        try await eventually("the refusals are said", within: 5) {
            watch.errorLines.filter { $0.contains("refused the token") }.count == 2
        }
    }
}
