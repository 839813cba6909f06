import Foundation
import Testing
import RoboscopeDomain
import WebSocketCodec

/// Revocations (docs/operations.md, "Running many customers"): made on one instance, in
/// force on every instance (REST 401 `token_revoked`, sockets closed 4001 `revoked`),
/// after a restart too, until lifted; who may revoke what; and a key that leaves the JWK
/// Set ending the sockets it authenticated.
@Suite(.serialized) struct RevocationTests {
    func token(_ tenant: String, _ scope: String, sub: String, issuedAgo: Double? = 60) throws -> String {
        let now = Date().timeIntervalSince1970
        var claims: [String: Any] = ["sub": sub, "tenant": tenant, "scope": scope, "exp": now + 600]
        if let issuedAgo { claims["iat"] = now - issuedAgo }
        return try Tokens.jwt(claims)
    }

    func status(_ server: ServerProcess, _ token: String) async throws -> (Int, String?) {
        let reply = try await server.client.send("GET", "/api/v1/spaces", headers: Tokens.bearer(token))
        return (reply.status, reply.json["error"]?["code"]?.string)
    }

    @Test func aRevocationEndsTokensOnEveryInstanceSurvivesARestartAndCanBeLifted() async throws {
        let database = try await TestDatabase.fresh("revocations")
        let first = try await ServerProcess(databaseURL: database, extraArguments: Tokens.serverArguments())
        var second = try await ServerProcess(databaseURL: database, extraArguments: Tokens.serverArguments())
        let lost = try token("acme", "write", sub: "fitter-1")
        let colleague = try token("acme", "write", sub: "fitter-2")
        let other = try token("globex", "write", sub: "fitter-1")
        let lostSocket = try WebSocketClient(port: second.wsPort, headers: ["Authorization: Bearer \(lost)"])
        let otherSocket = try WebSocketClient(port: second.wsPort, headers: ["Authorization: Bearer \(other)"])

        let admin = Tokens.bearer(try token("acme", "admin", sub: "acme-admin"))
        let made = try await first.client.send(
            "POST", "/api/v1/admin/revocations",
            json: ["subject": "fitter-1", "reason": "lost device"], headers: admin)
        #expect(made.status == 201, "\(made.json)")
        #expect(made.json["tenant"] == "acme" && made.json["subject"] == "fitter-1" && made.json["lifted_at"] == .null)
        #expect(made.json["created_by"] == "acme/acme-admin")
        let id = try #require(made.json["id"]?.string)

        // On the other instance: REST refused, the socket closed, everyone else untouched.
        try await eventually("the other instance refuses the revoked token", within: 5) {
            try await status(second, lost) == (401, "token_revoked")
        }
        let closed = try await lostSocket.closeFrame(timeout: 5)
        #expect(closed?.code == .unauthorized && closed?.reason == "revoked")
        #expect(try await status(first, lost) == (401, "token_revoked"))
        #expect(try await status(second, colleague).0 == 200)
        #expect(try await status(second, other).0 == 200, "the same subject of another tenant is another principal")
        try otherSocket.send(["op": "subscribe", "topic": "work_session:00000000-0000-0000-0000-000000000001"])
        #expect(try await otherSocket.next(op: "error")["code"] == "not_found", "the other tenant's socket stays open")
        // A token issued after the revocation holds.
        #expect(try await status(second, try token("acme", "write", sub: "fitter-1", issuedAgo: -5)).0 == 200)
        // A token without iat always matches.
        #expect(
            try await status(second, try token("acme", "write", sub: "fitter-1", issuedAgo: nil)).1 == "token_revoked")
        try await eventually("the refusal is counted", within: 5) {
            try await second.metric(#"roboscope_ws_refusals_total{reason="revoked"}"#) == 1
        }

        // A restart reads the revocations before serving.
        #expect(await second.terminate() == 0)
        second = try await ServerProcess(databaseURL: database, extraArguments: Tokens.serverArguments())
        #expect(try await status(second, lost) == (401, "token_revoked"))

        // Lifted: in force nowhere; the record stays, saying who lifted it.
        let lifted = try await second.client.send("DELETE", "/api/v1/admin/revocations/\(id)", headers: admin)
        #expect(
            lifted.status == 200 && lifted.json["lifted_by"] == "acme/acme-admin" && lifted.json["lifted_at"] != .null)
        try await eventually("the lifted revocation holds nowhere", within: 5) {
            try await status(first, lost).0 == 200
        }
        let listed = try await first.client.send("GET", "/api/v1/admin/revocations", headers: admin)
        #expect(
            listed.json["revocations"]?[0]?["id"]?.string == id && listed.json["revocations"]?[0]?["lifted_at"] != .null
        )
        #expect(await first.terminate() == 0)
        #expect(await second.terminate() == 0)
    }

    @Test func anAdministratorRevokesItsOwnTenantAndAnOperatorAnyone() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("revocation_rules"),
            extraArguments: Tokens.serverArguments())
        func post(_ body: JSONValue, as token: String) async throws -> HTTPClient.Reply {
            try await server.client.send("POST", "/api/v1/admin/revocations", json: body, headers: Tokens.bearer(token))
        }
        let acmeAdmin = try token("acme", "admin", sub: "a")
        let globexAdmin = try token("globex", "admin", sub: "g")
        let writer = try token("acme", "write read audit", sub: "w")
        let operatorToken = try token("ops", "operator", sub: "o")

        let refused = try await post(["tenant": "acme", "reason": "x"], as: writer)
        #expect(refused.status == 403 && refused.json["error"]?["scope_needed"] == "admin")
        let foreign = try await post(["tenant": "globex", "reason": "x"], as: acmeAdmin)
        #expect(foreign.status == 403 && foreign.json["error"]?["scope_needed"] == "operator")
        #expect(try await post(["kid": "k1", "reason": "x"], as: acmeAdmin).status == 403)
        // Bad input names its field.
        for (body, field) in [
            (["tenant": "acme"] as JSONValue, "reason"),
            (["reason": "x", "issued_before": "yesterday"], "issued_before"),
            (["tenant": "not a tenant!", "reason": "x"], "tenant"), (["reason": "x"], "tenant"),
            (["kid": "k1", "tenant": "acme", "reason": "x"], "kid"),
        ] {
            let reply = try await post(body, as: body["kid"] == nil && field != "tenant" ? acmeAdmin : operatorToken)
            #expect(reply.status == 422 && reply.json["error"]?["field"]?.string == field, "\(body): \(reply.json)")
        }
        let acmes = try await post(["reason": "offboarding"], as: acmeAdmin)
        #expect(acmes.status == 201 && acmes.json["tenant"] == "acme" && acmes.json["subject"] == .null)
        let globexes = try await post(
            ["tenant": "globex", "subject": "s", "reason": "x", "issued_before": "2020-01-01T00:00:00Z"],
            as: operatorToken)
        #expect(
            globexes.status == 201 && globexes.json["issued_before"]?.string?.hasPrefix("2020-01-01T00:00:00") == true)
        let key = try await post(["kid": "k1", "reason": "leaked"], as: operatorToken)
        #expect(key.status == 201 && key.json["tenant"] == .null && key.json["kid"] == "k1")

        // An administrator lists its own tenant's; another tenant's id is unknown to it.
        let mine = try await server.client.send("GET", "/api/v1/admin/revocations", headers: Tokens.bearer(globexAdmin))
        #expect(mine.json["revocations"]?.array?.count == 1)
        let acmeID = try #require(acmes.json["id"]?.string)
        let unknown = try await server.client.send(
            "DELETE", "/api/v1/admin/revocations/\(acmeID)", headers: Tokens.bearer(globexAdmin))
        let never = try await server.client.send(
            "DELETE", "/api/v1/admin/revocations/\(UUID())", headers: Tokens.bearer(globexAdmin))
        #expect(unknown.status == 404 && never.status == 404)
        #expect(
            unknown.json["error"]?["message"]?.string?.replacingOccurrences(of: acmeID, with: "<id>")
                == never.json["error"]?["message"]?.string.map { _ in "revocation <id> not found" })
        let all = try await server.client.send(
            "GET", "/api/v1/admin/revocations", headers: Tokens.bearer(operatorToken))
        #expect(all.json["revocations"]?.array?.count == 3)
        let filtered = try await server.client.send(
            "GET", "/api/v1/admin/revocations?tenant=globex", headers: Tokens.bearer(operatorToken))
        #expect(filtered.json["revocations"]?.array?.count == 1)
        #expect(await server.terminate() == 0)
    }

    /// Revocations and lifts are events of the log (`token_revocation.created`, `.lifted`),
    /// in the same transaction as the row that puts them in force: the revoked tenant's
    /// audit trail shows who did it (a key's revocation: the operator's own tenant's),
    /// no other tenant's does, a retry with one key revokes once, and `verify` finds
    /// every route right.
    @Test func revocationsAndLiftsAreRecordedInTheAuditTrail() async throws {
        let database = try await TestDatabase.fresh("revocation_audit")
        let server = try await ServerProcess(databaseURL: database, extraArguments: Tokens.serverArguments())
        let acmeAdmin = Tokens.bearer(try token("acme", "admin audit", sub: "acme-admin"))
        let operatorToken = Tokens.bearer(try token("ops", "operator audit", sub: "on-call"))
        func trail(_ headers: [String: String]) async throws -> [JSONValue] {
            let page = try await server.client.send(
                "GET", "/api/v1/audit?entity_type=token_revocation", headers: headers)
            #expect(page.status == 200, "\(page.json)")
            return page.json["data"]?.array ?? []
        }

        let keyed = acmeAdmin.merging(["Idempotency-Key": "revoke-fitter-1"]) { $1 }
        let made = try await server.client.send(
            "POST", "/api/v1/admin/revocations",
            json: ["subject": "fitter-1", "reason": "lost device"], headers: keyed)
        #expect(made.status == 201, "\(made.json)")
        let again = try await server.client.send(
            "POST", "/api/v1/admin/revocations",
            json: ["subject": "fitter-1", "reason": "lost device"], headers: keyed)
        #expect(
            again.status == 201 && again.header("Idempotent-Replayed") == "true" && again.json["id"] == made.json["id"])
        let id = try #require(made.json["id"]?.string)
        let listed = try await server.client.send("GET", "/api/v1/admin/revocations", headers: acmeAdmin)
        #expect(listed.json["revocations"]?.array?.count == 1, "a retry with one key revokes once")

        let lifted = try await server.client.send("DELETE", "/api/v1/admin/revocations/\(id)", headers: acmeAdmin)
        #expect(lifted.status == 200)
        let relifted = try await server.client.send("DELETE", "/api/v1/admin/revocations/\(id)", headers: acmeAdmin)
        #expect(relifted.status == 200, "lifting a lifted revocation changes nothing")

        let acmes = try await trail(acmeAdmin)
        #expect(
            acmes.map { $0["type"]?.string } == ["token_revocation.created", "token_revocation.lifted"], "\(acmes)")
        let created = try #require(acmes.first)
        #expect(created["actor"] == "acme-admin" && created["tenant"] == "acme" && created["scope"] != .null)
        #expect(created["entity"]?["type"] == "token_revocation" && created["entity"]?["id"]?.string == id)
        #expect(created["changes"]?["subject"]?["after"] == "fitter-1")
        #expect(created["changes"]?["reason"]?["after"] == "lost device")
        #expect(acmes[1]["changes"]?["lifted_by"]?["after"] == "acme/acme-admin", "\(acmes[1])")

        // An operator's revocation of another tenant is in that tenant's trail; a key's, in
        // the operator's own tenant's; neither in anyone else's.
        let globex = try await server.client.send(
            "POST", "/api/v1/admin/revocations",
            json: ["tenant": "globex", "reason": "unpaid"], headers: operatorToken)
        let key = try await server.client.send(
            "POST", "/api/v1/admin/revocations",
            json: ["kid": "k-old", "reason": "leaked"], headers: operatorToken)
        #expect(globex.status == 201 && key.status == 201)
        // Issued after the revocation of every globex token.
        let globexAuditor = Tokens.bearer(try token("globex", "audit", sub: "auditor", issuedAgo: -5))
        let globexes = try await trail(globexAuditor)
        #expect(globexes.count == 1 && globexes.first?["actor"] == "on-call" && globexes.first?["tenant"] == "ops")
        #expect(globexes.first?["changes"]?["tenant"]?["after"] == "globex")
        let operators = try await trail(operatorToken)
        #expect(operators.count == 1 && operators.first?["changes"]?["kid"]?["after"] == "k-old", "\(operators)")
        #expect(try await trail(acmeAdmin).count == 2)

        // The gateway's tailer passes over events that are on no topic.
        let space = try await server.client.send(
            "POST", "/api/v1/spaces", json: ["key": "k", "name": "n"], headers: acmeAdmin)
        let session = try await server.client.send(
            "POST", "/api/v1/work-sessions",
            json: ["space_id": space.json["id"]!, "session_type": "inspection"],
            headers: acmeAdmin)
        let topic = "work_session:\(try #require(session.json["id"]?.string))"
        let watcher = try WebSocketClient(
            port: server.wsPort, headers: ["Authorization: Bearer \(try token("acme", "read", sub: "w"))"])
        try watcher.send(["op": "subscribe", "topic": .string(topic), "since": 0])
        #expect(try await watcher.next(op: "event")["type"] == "work_session.created")
        _ = try await server.client.send(
            "POST", "/api/v1/admin/revocations", json: ["subject": "gone", "reason": "x"],
            headers: acmeAdmin)
        let done = try await server.client.send(
            "PATCH", "/api/v1/work-sessions/\(session.json["id"]!.string!)",
            json: ["status": "done"], headers: acmeAdmin)
        #expect(done.status == 200, "\(done.json)")
        #expect(try await watcher.next(op: "event")["type"] == "work_session.updated")
        let acmeReader = Tokens.bearer(try token("acme", "audit", sub: "reader"))
        let pieces = try await server.client.send(
            "GET", "/api/v1/audit?type=token_revocation.lifted", headers: acmeReader)
        #expect(pieces.json["data"]?.array?.count == 1)

        #expect(await server.terminate() == 0)
        let verified = try await CommandRunner.roboscope(["verify", "--database-url", database])
        #expect(verified.status == 0, "\(verified.output)")
    }

    /// A key taken out of the JWK Set file ends the sockets its tokens opened (4001, `key
    /// retired`); a key kept keeps its sockets.
    @Test func aKeyLeavingTheSetEndsItsSockets() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("jwks.json")
        let old = ES256Key(kid: "old")
        let new = ES256Key(kid: "new")
        try ES256Key.writeSet([old, new], to: file)
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("key_retired"),
            extraArguments: ["--auth-jwks-file", file.path, "--auth-allow-any-audience", "--auth-allow-any-issuer"]
        )
        func claims(_ sub: String) -> [String: Any] {
            ["sub": sub, "tenant": "acme", "scope": "read", "exp": Date().timeIntervalSince1970 + 600]
        }
        let retiring = try WebSocketClient(
            port: server.wsPort, headers: ["Authorization: Bearer \(try old.jwt(claims("a")))"])
        let staying = try WebSocketClient(
            port: server.wsPort, headers: ["Authorization: Bearer \(try new.jwt(claims("b")))"])
        try ES256Key.writeSet([new], to: file)
        let closed = try await retiring.closeFrame(timeout: 10)
        #expect(closed?.code == .unauthorized && closed?.reason == "key retired")
        try staying.send(["op": "subscribe", "topic": "work_session:00000000-0000-0000-0000-000000000001"])
        #expect(try await staying.next(op: "error")["code"] == "not_found")
        #expect(try await server.metric(#"roboscope_ws_refusals_total{reason="key_retired"}"#) == 1)
        #expect(await server.terminate() == 0)
    }
}
