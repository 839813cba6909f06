import Foundation
import Testing
import RoboscopeDomain

/// Rule 5 of docs/security.md for locks, with authentication on: only the subject that
/// took a lock extends or releases it, and an administrator of the tenant breaks it with
/// `force=true`, recorded as `work_session.lock_broken`.
@Suite(.serialized) struct LockBreakTests {
    static let shared = LazyServer("lock_break") { Tokens.serverArguments() }

    @Test func onlyTheHolderReleasesAndAnAdministratorBreaks() async throws {
        let (server, url) = try await Self.shared.get()
        let client = server.client
        let ids = try await TenancyMatrixTests.fixtures(client, tenant: "acme")
        let path = "/api/v1/locks/\(ids.session)"
        let alice = Tokens.bearer(try Tokens.token("acme", "write", sub: "alice"))
        let bob = Tokens.bearer(try Tokens.token("acme", "write", sub: "bob"))
        let acquired = try await client.send("POST", path, json: ["ttl_seconds": 60, "enforce": true], headers: alice)
        let token = try #require(acquired.json["token"]?.string)

        // Bob has the token (read from a log, say) but is not the holder.
        let stolen = try await client.send("DELETE", path, json: ["token": .string(token)], headers: bob)
        #expect(stolen.status == 403)
        #expect(
            try await client.send(
                "POST", path + "/extend", json: ["token": .string(token), "ttl_seconds": 60], headers: bob
            ).status == 403)
        // Force needs admin, and another tenant's admin sees no such session.
        let forcedByWriter = try await client.send("DELETE", path + "?force=true", headers: bob)
        #expect(forcedByWriter.status == 403)
        #expect(forcedByWriter.json["error"]?["scope_needed"] == "admin")
        let outsider = Tokens.bearer(try Tokens.token("globex", "admin", sub: "carol"))
        #expect(try await client.send("DELETE", path + "?force=true", headers: outsider).status == 404)
        #expect(try await client.send("DELETE", path + "?force=maybe", headers: bob).status == 400)
        #expect(try await client.send("GET", path, headers: alice).json["holder"] == "alice")

        let admin = Tokens.bearer(try Tokens.token("acme", "admin", sub: "site-admin"))
        let broken = try await client.send("DELETE", path + "?force=true", headers: admin)
        #expect(broken.status == 200)
        #expect(broken.json["released"] == true)
        #expect(broken.json["holder"] == "alice")
        #expect(try await client.send("GET", path, headers: alice).json["locked"] == false)
        // Nothing left to break.
        #expect(try await client.send("DELETE", path + "?force=true", headers: admin).json["released"] == false)
        // The enforced lock no longer binds: bob writes without a lock token.
        let write = try await client.send(
            "PATCH", "/api/v1/markers/\(ids.marker)", json: ["label": "after the break"], headers: bob)
        #expect(write.status == 200, "\(write.json)")

        let connection = try TestDatabase.connect(url)
        let rows = try connection.query(
            """
            SELECT type, metadata->>'actor', data->>'holder', metadata->>'scope' FROM eventlog.events
            WHERE stream_type = 'work_session_lock' AND stream_id = $1 ORDER BY position
            """, [ids.session])
        #expect(
            (0..<rows.rowCount).map { rows.string($0, 0)! } == [
                "work_session.lock_acquired", "work_session.lock_broken",
            ])
        #expect(rows.string(1, 1) == "site-admin")
        #expect(rows.string(1, 2) == "alice")
        #expect(rows.string(1, 3) == "read write admin")

        // The audit trail shows it to an auditor of the tenant.
        let auditor = Tokens.bearer(try Tokens.token("acme", "audit"))
        let audit = try await client.send(
            "GET", "/api/v1/audit?work_session_id=\(ids.session)&type=work_session.lock_broken", headers: auditor)
        #expect(audit.status == 200, "\(audit.json)")
        #expect(audit.json["data"]?[0]?["actor"] == "site-admin")
    }
}
