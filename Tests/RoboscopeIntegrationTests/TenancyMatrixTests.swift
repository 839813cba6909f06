import Foundation
import Testing
import RoboscopeDomain

/// Rule 2 and 3 of docs/security.md on every operation of docs/openapi.yaml: another
/// tenant's id answers exactly as an unknown id, so does a space outside the token's
/// `spaces`, each scope below the one needed is a 403, and the one needed passes. An
/// operation of the spec with no case here fails the test: a route added later cannot
/// skip authorization.
@Suite(.serialized) struct TenancyMatrixTests {
    static let shared = LazyServer("tenancy") { Tokens.serverArguments() }

    /// The ids an operation's path and body name.
    struct Ids: Sendable {
        var space: String
        var session: String
        var marker: String
    }

    enum Need: Sendable {
        /// Open to anyone (probes, metrics, the console's page).
        case open
        /// Any valid token.
        case authenticated
        case scope(String)
    }

    /// How an operation is called on the given ids.
    struct Case: Sendable {
        var need: Need
        /// Whether it names an entity (path or body): the rule-2 comparison applies.
        var namesEntity = true
        var path: @Sendable (Ids) -> String
        var body: (@Sendable (Ids) -> JSONValue)? = nil
        /// Scopes below the one needed (each must get 403).
        var below: [String] = []
        /// What the needed scope may get: a success, or (for an id the case cannot make
        /// beforehand) the 404 of an unknown id, once the scope let it through.
        var allowedUpTo = 399

        /// An operation on the tenant as a whole (it names no entity) that takes `scope`,
        /// which every other scope of the tenant's roles lacks.
        static func tenantWide(
            _ path: String, _ scope: String, body: JSONValue? = nil, allowedUpTo: Int = 399
        ) -> Case {
            var wide = Case(need: .scope(scope), namesEntity: false, path: { _ in path })
            if let body { wide.body = { _ in body } }
            wide.below = ["read", "write", "admin", "audit"].filter { $0 != scope }
            wide.allowedUpTo = allowedUpTo
            return wide
        }
    }

    static let marker: @Sendable (Ids) -> JSONValue = { ids in Fixtures.markerBody(session: ids.session) }

    static let cases: [String: Case] = [
        "GET /api/v1/spaces": Case(
            need: .scope("read"), namesEntity: false, path: { _ in "/api/v1/spaces" }, below: ["operator"]),
        "POST /api/v1/spaces": Case(
            need: .scope("admin"), namesEntity: false, path: { _ in "/api/v1/spaces" },
            body: { _ in ["key": .string("k-\(UUID())"), "name": "n"] }, below: ["read", "write", "audit"]),
        "GET /api/v1/spaces/{id}": Case(
            need: .scope("read"), path: { "/api/v1/spaces/\($0.space)" }, below: ["operator"]),
        "PATCH /api/v1/spaces/{id}": Case(
            need: .scope("admin"), path: { "/api/v1/spaces/\($0.space)" }, body: { _ in ["name": "m"] },
            below: ["read", "write"]),
        "DELETE /api/v1/spaces/{id}": Case(
            need: .scope("admin"), path: { "/api/v1/spaces/\($0.space)" }, below: ["read", "write"]),
        "GET /api/v1/spaces/{id}/history": Case(
            need: .scope("audit"), path: { "/api/v1/spaces/\($0.space)/history" }, below: ["read", "write"]),
        "GET /api/v1/work-sessions": Case(
            need: .scope("read"), path: { "/api/v1/work-sessions?space_id=\($0.space)" }, below: ["operator"]),
        "POST /api/v1/work-sessions": Case(
            need: .scope("write"), path: { _ in "/api/v1/work-sessions" },
            body: { ["space_id": .string($0.space), "session_type": "inspection"] }, below: ["read"]),
        "GET /api/v1/work-sessions/{id}": Case(
            need: .scope("read"), path: { "/api/v1/work-sessions/\($0.session)" }, below: ["operator"]),
        "PATCH /api/v1/work-sessions/{id}": Case(
            need: .scope("write"), path: { "/api/v1/work-sessions/\($0.session)" },
            body: { _ in ["status": "active"] }, below: ["read"]),
        "DELETE /api/v1/work-sessions/{id}": Case(
            need: .scope("write"), path: { "/api/v1/work-sessions/\($0.session)" }, below: ["read"]),
        "GET /api/v1/work-sessions/{id}/history": Case(
            need: .scope("audit"), path: { "/api/v1/work-sessions/\($0.session)/history" },
            below: ["read", "write"]),
        "GET /api/v1/markers": Case(
            need: .scope("read"), path: { "/api/v1/markers?work_session_id=\($0.session)" }, below: ["operator"]),
        "POST /api/v1/markers": Case(
            need: .scope("write"), path: { _ in "/api/v1/markers" }, body: marker, below: ["read"]),
        "POST /api/v1/markers/bulk": Case(
            need: .scope("write"), path: { _ in "/api/v1/markers/bulk" },
            body: { ["markers": [marker($0)]] }, below: ["read"]),
        "GET /api/v1/markers/{id}": Case(
            need: .scope("read"), path: { "/api/v1/markers/\($0.marker)" }, below: ["operator"]),
        "PATCH /api/v1/markers/{id}": Case(
            need: .scope("write"), path: { "/api/v1/markers/\($0.marker)" }, body: { _ in ["label": "x"] },
            below: ["read"]),
        "DELETE /api/v1/markers/{id}": Case(
            need: .scope("write"), path: { "/api/v1/markers/\($0.marker)" }, below: ["read"]),
        "GET /api/v1/markers/{id}/history": Case(
            need: .scope("audit"), path: { "/api/v1/markers/\($0.marker)/history" }, below: ["read"]),
        "GET /api/v1/markers/{id}/details": Case(
            need: .scope("read"), path: { "/api/v1/markers/\($0.marker)/details" }, below: ["operator"]),
        "PUT /api/v1/markers/{id}/details": Case(
            need: .scope("write"), path: { "/api/v1/markers/\($0.marker)/details" },
            body: { _ in ["custom_props": ["a": 1]] }, below: ["read"]),
        "DELETE /api/v1/markers/{id}/details": Case(
            need: .scope("write"), path: { "/api/v1/markers/\($0.marker)/details" }, below: ["read"]),
        "POST /api/v1/markers/{id}/details/calculate": Case(
            need: .scope("write"), path: { "/api/v1/markers/\($0.marker)/details/calculate" },
            below: ["read"]),
        "POST /api/v1/presence/{work_session_id}": Case(
            need: .scope("write"), path: { "/api/v1/presence/\($0.session)" },
            body: { _ in [:] }, below: ["read"]),
        "GET /api/v1/presence/{work_session_id}": Case(
            need: .scope("read"), path: { "/api/v1/presence/\($0.session)" }, below: ["operator"]),
        "DELETE /api/v1/presence/{work_session_id}/{user_id}": Case(
            need: .scope("write"), path: { "/api/v1/presence/\($0.session)/tester" },
            below: ["read"]),
        "POST /api/v1/locks/{work_session_id}": Case(
            need: .scope("write"), path: { "/api/v1/locks/\($0.session)" },
            body: { _ in ["ttl_seconds": 5] }, below: ["read"]),
        "GET /api/v1/locks/{work_session_id}": Case(
            need: .scope("read"), path: { "/api/v1/locks/\($0.session)" }, below: ["operator"]),
        "DELETE /api/v1/locks/{work_session_id}": Case(
            need: .scope("write"), path: { "/api/v1/locks/\($0.session)" },
            body: { _ in ["token": "not-the-token"] }, below: ["read"]),
        "POST /api/v1/locks/{work_session_id}/extend": Case(
            need: .scope("write"), path: { "/api/v1/locks/\($0.session)/extend" },
            body: { _ in ["token": "not-the-token", "ttl_seconds": 5] }, below: ["read"]),
        "GET /api/v1/audit": .tenantWide("/api/v1/audit", "audit"),
        "GET /api/v1/changes": Case(
            need: .scope("read"), path: { "/api/v1/changes?topic=work_session:\($0.session)" }, below: ["operator"]),
        "GET /api/v1/realtime": Case(need: .authenticated, namesEntity: false, path: { _ in "/api/v1/realtime" }),
        "GET /api/v1/integrity": Case(
            need: .scope("audit"), path: { "/api/v1/integrity?work_session_id=\($0.session)" }, below: ["read"]),
        // The tenant's own log: a first checkpoint may still be on its way (404, or 400 for a tree it lacks).
        "GET /api/v1/checkpoints/latest": .tenantWide("/api/v1/checkpoints/latest", "audit", allowedUpTo: 404),
        "GET /api/v1/checkpoints/key": .tenantWide("/api/v1/checkpoints/key", "audit"),
        "GET /api/v1/proofs/inclusion": .tenantWide(
            "/api/v1/proofs/inclusion?tenant_seq=1&tree_size=1", "audit", allowedUpTo: 400),
        "GET /api/v1/proofs/consistency": .tenantWide(
            "/api/v1/proofs/consistency?from=1&to=1", "audit", allowedUpTo: 400),
        "GET /api/v1/proofs/entries": .tenantWide("/api/v1/proofs/entries?limit=10", "audit"),
        // A revocation of a subject no token of the matrix has: the rest of the run is unaffected.
        "POST /api/v1/admin/revocations": .tenantWide(
            "/api/v1/admin/revocations", "admin", body: ["subject": "matrix-nobody", "reason": "matrix"]),
        "GET /api/v1/admin/revocations": .tenantWide("/api/v1/admin/revocations", "admin"),
        "DELETE /api/v1/admin/revocations/{id}": .tenantWide(
            "/api/v1/admin/revocations/\(UUID())", "admin", allowedUpTo: 404),
        "GET /api/v1/admin/connections": .tenantWide("/api/v1/admin/connections", "admin"),
        // Every gateway hears a disconnect (the test servers share Redis): a subject nobody is.
        "DELETE /api/v1/admin/connections": .tenantWide("/api/v1/admin/connections?subject=matrix-nobody", "admin"),
        "GET /healthz": Case(need: .open, namesEntity: false, path: { _ in "/healthz" }),
        "GET /readyz": Case(need: .open, namesEntity: false, path: { _ in "/readyz" }),
        "GET /metrics": Case(need: .open, namesEntity: false, path: { _ in "/metrics" }),
        "GET /console": Case(need: .open, namesEntity: false, path: { _ in "/console" }),
    ]

    /// `METHOD /path` of every operation in docs/openapi.yaml.
    static func specifiedOperations() throws -> [String] {
        let text = try String(
            contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        var operations: [String] = []
        var inPaths = false
        var path: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" { inPaths = true; continue }
            if inPaths, let first = line.first, first != " ", first != "#" { inPaths = false }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast())
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let method = line.trimmingCharacters(in: .whitespaces).dropLast()
                if ["get", "post", "put", "patch", "delete"].contains(method) {
                    operations.append("\(method.uppercased()) \(path)")
                }
            }
        }
        return operations
    }

    /// A space, a session and a marker (with details) of `tenant`.
    static func fixtures(_ client: HTTPClient, tenant: String) async throws -> Ids {
        let admin = Tokens.bearer(try Tokens.token(tenant, "admin"))
        let space = try await client.send(
            "POST", "/api/v1/spaces", json: ["key": .string("k-\(UUID())"), "name": "n"], headers: admin)
        guard space.status == 201 else { throw TestFailure("space: \(space.status) \(space.json)") }
        let spaceID = space.json["id"]!.string!
        let session = try await client.send(
            "POST", "/api/v1/work-sessions",
            json: ["space_id": .string(spaceID), "session_type": "inspection"], headers: admin)
        guard session.status == 201 else { throw TestFailure("session: \(session.status) \(session.json)") }
        let sessionID = session.json["id"]!.string!
        let marker = try await client.send(
            "POST", "/api/v1/markers", json: Self.marker(Ids(space: spaceID, session: sessionID, marker: "")),
            headers: admin)
        guard marker.status == 201 else { throw TestFailure("marker: \(marker.status) \(marker.json)") }
        return Ids(space: spaceID, session: sessionID, marker: marker.json["id"]!.string!)
    }

    static func call(
        _ client: HTTPClient, _ operation: String, _ test: Case, _ ids: Ids, token: String?
    ) async throws -> HTTPClient.Reply {
        let method = String(operation.split(separator: " ")[0])
        let headers = token.map(Tokens.bearer) ?? [:]
        if let body = test.body {
            return try await client.send(method, test.path(ids), json: body(ids), headers: headers)
        }
        return try await client.send(method, test.path(ids), headers: headers)
    }

    /// What must not tell two answers apart: status, error code, and the message with the ids taken out.
    static func shape(_ reply: HTTPClient.Reply, _ ids: Ids) -> String {
        var message = reply.json["error"]?["message"]?.string ?? ""
        for id in [ids.space, ids.session, ids.marker] where !id.isEmpty {
            message = message.replacingOccurrences(of: id, with: "<id>")
        }
        let body =
            reply.json["error"] == nil
            ? "\(reply.json.count)" : "\(reply.json["error"]?["code"]?.string ?? "") \(message)"
        return "\(reply.status) \(body) position:\(reply.header("Roboscope-Position") != nil)"
    }

    @Test func everyOperationOfTheSpecHasACase() throws {
        let specified = try Self.specifiedOperations()
        #expect(specified.count >= 30, "read \(specified.count) operations from docs/openapi.yaml")
        for operation in specified {
            #expect(Self.cases[operation] != nil, "\(operation) has no authorization case in TenancyMatrixTests")
        }
        for operation in Self.cases.keys {
            #expect(specified.contains(operation), "\(operation) is not in docs/openapi.yaml")
        }
    }

    /// What each case needs is what the code's table (`OperationScopes`, docs/security.md) says.
    @Test func everyCaseNeedsWhatTheScopeTableSays() {
        let table = Dictionary(uniqueKeysWithValues: OperationScopes.rest.map { ($0.operation, $0.required) })
        for (operation, test) in Self.cases {
            let expected =
                switch test.need {
                case .open: "none"
                case .authenticated: "token"
                case .scope(let scope): scope
                }
            #expect(
                table[operation]?.hasPrefix(expected) == true,
                "\(operation): the matrix needs \(expected), the table \(table[operation] ?? "-")")
        }
        for (op, test) in Self.socketCases {
            let required = OperationScopes.webSocket.first { $0.operation == op }?.required
            #expect(required == (test.needs ?? "token"), "\(op): \(required ?? "-")")
        }
    }

    @Test(arguments: Array(cases.keys).sorted())
    func theOperationIsAuthorized(_ operation: String) async throws {
        let server = try await Self.shared.get().server
        let client = server.client
        let test = Self.cases[operation]!
        switch test.need {
        case .open:
            let reply = try await Self.call(
                client, operation, test, Ids(space: "", session: "", marker: ""), token: nil)
            #expect(reply.status != 401 && reply.status != 403, "\(operation): \(reply.status)")
            return
        case .authenticated:
            #expect(
                try await Self.call(client, operation, test, Ids(space: "", session: "", marker: ""), token: nil).status
                    == 401)
            let reply = try await Self.call(
                client, operation, test, Ids(space: "", session: "", marker: ""),
                token: try Tokens.token("acme", "operator"))
            #expect(reply.status == 200, "\(operation): \(reply.status) \(reply.json)")
            return
        case .scope(let needed):
            // 401 first.
            let ids = try await Self.fixtures(client, tenant: "acme")
            #expect(
                try await Self.call(client, operation, test, ids, token: nil).status == 401,
                "\(operation) without a token")
            let all = "read write admin audit operator"
            if test.namesEntity {
                // Another tenant's id, a space outside `spaces`, and an unknown id: the same answer.
                let unknown = Ids(
                    space: UUID().uuidString.lowercased(), session: UUID().uuidString.lowercased(),
                    marker: UUID().uuidString.lowercased())
                let asUnknown = Self.shape(
                    try await Self.call(client, operation, test, unknown, token: try Tokens.token("globex", all)),
                    unknown)
                let otherTenant = Self.shape(
                    try await Self.call(client, operation, test, ids, token: try Tokens.token("globex", all)), ids)
                #expect(
                    otherTenant == asUnknown,
                    "\(operation): another tenant's id answers \(otherTenant), an unknown one \(asUnknown)")
                #expect(
                    !otherTenant.hasPrefix("2") || otherTenant.contains(" 0 "),
                    "\(operation) showed another tenant's data: \(otherTenant)")
                let narrowed = try Tokens.token("acme", all, spaces: [UUID().uuidString.lowercased()])
                let outside = Self.shape(try await Self.call(client, operation, test, ids, token: narrowed), ids)
                let unknownNarrowed = Self.shape(
                    try await Self.call(client, operation, test, unknown, token: narrowed), unknown)
                #expect(
                    outside == unknownNarrowed,
                    "\(operation): a space outside spaces answers \(outside), an unknown one \(unknownNarrowed)")
            }
            for scope in test.below {
                let reply = try await Self.call(client, operation, test, ids, token: try Tokens.token("acme", scope))
                #expect(reply.status == 403, "\(operation) with \(scope): \(reply.status) \(reply.json)")
                #expect(reply.json["error"]?["code"] == "forbidden")
                #expect(
                    reply.json["error"]?["message"]?.string?.contains(needed) == true, "\(operation): \(reply.json)")
            }
            let allowed = try await Self.call(
                client, operation, test, ids, token: try Tokens.token("acme", needed, sub: "tester"))
            #expect(
                allowed.status <= test.allowedUpTo, "\(operation) with \(needed): \(allowed.status) \(allowed.json)")
        }
    }

    // MARK: WebSocket ops

    /// How each WebSocket op is tried: the message for the given ids, and the scope it needs
    /// (nil: any authenticated connection, it touches only the connection's own state).
    static let socketCases:
        [String: (needs: String?, below: [String], message: @Sendable (Ids) -> JSONValue, success: String)] = [
            "subscribe": (
                "read", ["operator"], { ["op": "subscribe", "topic": .string("work_session:\($0.session)")] },
                "subscribed"
            ),
            "presence": (
                "write", ["read", "audit"], { ["op": "presence", "work_session_id": .string($0.session)] }, "present"
            ),
            "unsubscribe": (
                nil, [], { ["op": "unsubscribe", "topic": .string("work_session:\($0.session)")] }, "error"
            ),
            "auth": (
                nil, [], { _ in ["op": "auth", "token": .string((try? Tokens.token("acme", "read")) ?? "")] },
                "authenticated"
            ),
        ]

    /// The answer to `message` on a fresh socket of `token`: its op and error code.
    static func socketAnswer(_ port: Int, token: String, _ message: JSONValue) async throws -> String {
        let socket = try WebSocketClient(port: port, headers: ["Authorization: Bearer \(token)"])
        try socket.send(message)
        while true {
            let answer = try await socket.nextJSON()
            guard let op = answer["op"]?.string, op != "presence", op != "event" else { continue }
            let message =
                answer["message"]?.string.map {
                    " " + $0.replacingOccurrences(of: #"[0-9a-f-]{36}"#, with: "<id>", options: .regularExpression)
                } ?? ""
            return op + (answer["code"]?.string.map { " " + $0 } ?? "") + message
        }
    }

    @Test func everyWebSocketOpHasACase() {
        #expect(Set(Self.socketCases.keys) == Set(ClientRequest.operations))
    }

    @Test(arguments: ClientRequest.operations)
    func theWebSocketOpIsAuthorized(_ op: String) async throws {
        let server = try await Self.shared.get().server
        let test = try #require(Self.socketCases[op], "\(op) has no authorization case")
        let ids = try await Self.fixtures(server.client, tenant: "acme")
        let port = server.wsPort
        guard let needed = test.needs else {
            #expect(
                try await Self.socketAnswer(
                    port, token: try Tokens.token("acme", "read", sub: "tester"), test.message(ids)
                )
                .hasPrefix(test.success))
            return
        }
        let all = "read write admin audit operator"
        let unknown = Ids(space: UUID().uuidString.lowercased(), session: UUID().uuidString.lowercased(), marker: "")
        let asUnknown = try await Self.socketAnswer(port, token: try Tokens.token("globex", all), test.message(unknown))
        #expect(asUnknown.hasPrefix("error not_found"), "\(op): \(asUnknown)")
        let otherTenant = try await Self.socketAnswer(port, token: try Tokens.token("globex", all), test.message(ids))
        #expect(
            otherTenant == asUnknown, "\(op): another tenant's id answers \(otherTenant), an unknown one \(asUnknown)")
        let narrowed = try Tokens.token("acme", all, spaces: [UUID().uuidString.lowercased()])
        let outside = try await Self.socketAnswer(port, token: narrowed, test.message(ids))
        #expect(outside == asUnknown, "\(op): a space outside spaces answers \(outside), an unknown one \(asUnknown)")
        for scope in test.below {
            let answer = try await Self.socketAnswer(port, token: try Tokens.token("acme", scope), test.message(ids))
            #expect(answer.hasPrefix("error forbidden") && answer.contains(needed), "\(op) with \(scope): \(answer)")
        }
        let allowed = try await Self.socketAnswer(
            port, token: try Tokens.token("acme", needed, sub: "tester"), test.message(ids))
        #expect(allowed.hasPrefix(test.success), "\(op) with \(needed): \(allowed)")
    }
}
