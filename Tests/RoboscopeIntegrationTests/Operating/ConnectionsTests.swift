import Foundation
import Testing
import RoboscopeDomain
import WebSocketCodec

/// `GET`/`DELETE /admin/connections` (docs/operations.md, "Running many customers"): every
/// gateway's open sockets, listed and closed, over two instances. Tenants are named afresh:
/// every test server shares one Redis, where gateways publish.
@Suite(.serialized) struct ConnectionsTests {
    @Test func anOperatorListsAndClosesATenantsSocketsOnEveryGateway() async throws {
        let database = try await TestDatabase.fresh("connections")
        let first = try await ServerProcess(databaseURL: database, extraArguments: Tokens.serverArguments())
        let second = try await ServerProcess(databaseURL: database, extraArguments: Tokens.serverArguments())
        let tenant = "conn-\(UUID().uuidString.prefix(8).lowercased())"
        let admin = Tokens.bearer(try Tokens.token(tenant, "admin", sub: "boss"))
        let space = try await first.client.send(
            "POST", "/api/v1/spaces", json: ["key": "k", "name": "n"], headers: admin)
        let spaceID = try #require(space.json["id"]?.string)
        let fitter = try WebSocketClient(
            port: first.wsPort,
            headers: [
                "Authorization: Bearer \(try Tokens.token(tenant, "read", sub: "fitter"))",
                "User-Agent: RoboscopeKit/1.0 (Linux; test)",
            ])
        try fitter.send(["op": "subscribe", "topic": .string("space:\(spaceID)")])
        _ = try await fitter.next(op: "subscribed")
        let welder = try WebSocketClient(
            port: second.wsPort, headers: ["Authorization: Bearer \(try Tokens.token(tenant, "read", sub: "welder"))"])

        func listed(_ query: String = "", as headers: [String: String]) async throws -> [JSONValue] {
            let reply = try await second.client.send("GET", "/api/v1/admin/connections\(query)", headers: headers)
            return reply.json["connections"]?.array ?? []
        }
        // A gateway publishes its sockets as its presence thread last saw them: the
        // fitter's subscription may come one publication after its socket.
        try await eventually("both gateways published their sockets, the fitter's topic with it", within: 30) {
            let rows = try await listed(as: admin)
            return rows.count == 2 && rows.contains { $0["subject"] == "fitter" && $0["topics"]?.array?.count == 1 }
        }
        let rows = try await listed(as: admin)
        let fitterRow = try #require(rows.first { $0["subject"] == "fitter" })
        #expect(fitterRow["tenant"]?.string == tenant && fitterRow["client_address"] == "127.0.0.1")
        #expect(fitterRow["user_agent"] == "RoboscopeKit/1.0 (Linux; test)")
        #expect(fitterRow["topics"] == .array([.string("space:\(spaceID)")]))
        #expect(fitterRow["connected_at"]?.string != nil && fitterRow["gateway"]?.string != nil)
        #expect(Set(rows.compactMap { $0["gateway"]?.string }).count == 2, "one socket on each gateway")
        #expect(try await listed("?subject=welder", as: admin).count == 1)
        // Another tenant's administrator sees none of them and may not ask for them.
        let stranger = Tokens.bearer(try Tokens.token("conn-other", "admin", sub: "x"))
        #expect(try await listed(as: stranger).allSatisfy { $0["tenant"]?.string == "conn-other" })
        #expect(
            try await second.client.send("GET", "/api/v1/admin/connections?tenant=\(tenant)", headers: stranger).status
                == 403)
        // The operator's view of everyone; a disconnect of everyone is refused.
        let operatorToken = Tokens.bearer(try Tokens.token("ops", "operator", sub: "o"))
        #expect(try await listed("?tenant=\(tenant)", as: operatorToken).count == 2)
        let everyone = try await first.client.send("DELETE", "/api/v1/admin/connections", headers: operatorToken)
        #expect(everyone.status == 422 && everyone.json["error"]?["field"] == "tenant")

        // One subject's sockets close, on whichever gateway they are; the others stay.
        let closing = try await first.client.send("DELETE", "/api/v1/admin/connections?subject=fitter", headers: admin)
        #expect(closing.status == 202, "\(closing.json)")
        let closed = try await fitter.closeFrame(timeout: 5)
        #expect(closed?.code == .unauthorized && closed?.reason == "disconnected")
        try welder.send(["op": "subscribe", "topic": .string("space:\(spaceID)")])
        #expect(try await welder.next(op: "subscribed")["op"] == "subscribed")
        try await eventually("the listing drops the closed socket", within: 10) {
            try await listed(as: admin).compactMap { $0["subject"]?.string } == ["welder"]
        }
        #expect(await first.terminate() == 0)
        #expect(await second.terminate() == 0)
    }

    /// Two deployments on one Redis (`--deployment-name` apart): neither lists nor closes
    /// the other's sockets, not even those of a tenant and subject of the same names.
    @Test func deploymentsSharingARedisKeepTheirSocketsApart() async throws {
        let ours = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("connections_ours"), extraArguments: Tokens.serverArguments())
        let theirs = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("connections_theirs"), extraArguments: Tokens.serverArguments())
        let tenant = "conn-\(UUID().uuidString.prefix(8).lowercased())"
        let admin = Tokens.bearer(try Tokens.token(tenant, "admin", sub: "boss"))
        let operatorToken = Tokens.bearer(try Tokens.token("ops", "operator", sub: "o"))
        let fitter = "Authorization: Bearer \(try Tokens.token(tenant, "read", sub: "fitter"))"
        let space = try await theirs.client.send(
            "POST", "/api/v1/spaces", json: ["key": "k", "name": "n"], headers: admin)
        let spaceID = try #require(space.json["id"]?.string)
        let mine = try WebSocketClient(port: ours.wsPort, headers: [fitter])
        let other = try WebSocketClient(port: theirs.wsPort, headers: [fitter])

        func listed(on server: ServerProcess) async throws -> [JSONValue] {
            let reply = try await server.client.send("GET", "/api/v1/admin/connections", headers: operatorToken)
            return (reply.json["connections"]?.array ?? []).filter { $0["tenant"]?.string == tenant }
        }
        try await eventually("each deployment lists its own socket", within: 30) {
            let (ourRows, theirRows) = (try await listed(on: ours), try await listed(on: theirs))
            return ourRows.count == 1 && theirRows.count == 1
        }
        let closing = try await ours.client.send("DELETE", "/api/v1/admin/connections?subject=fitter", headers: admin)
        #expect(closing.status == 202, "\(closing.json)")
        #expect(try await mine.closeFrame(timeout: 5)?.reason == "disconnected")
        try other.send(["op": "subscribe", "topic": .string("space:\(spaceID)")])
        #expect(try await other.next(op: "subscribed")["op"] == "subscribed", "the other deployment's socket is open")
        try await eventually("our listing drops the closed socket", within: 10) { try await listed(on: ours).isEmpty }
        #expect(try await listed(on: theirs).count == 1)
        #expect(await ours.terminate() == 0)
        #expect(await theirs.terminate() == 0)
    }
}
