import Foundation
import Testing
import RoboscopeDomain

/// `--auth-issuers-file` (docs/operations.md, "Running many customers"): each customer
/// brings its own identity provider, pinned to its tenant or naming it in a claim; only the
/// operators' provider may grant `operator`; the file is re-read when it changes.
@Suite(.serialized) struct IssuersFileTests {
    struct Provider {
        let issuer: String
        let key: ES256Key
        let jwks: URL

        func token(_ claims: [String: Any], audience: String) throws -> String {
            var all = claims
            all["iss"] = issuer
            all["aud"] = audience
            all["exp"] = Date().timeIntervalSince1970 + 600
            return try key.jwt(all)
        }
    }

    static func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("issuers-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func provider(_ name: String, in folder: URL) throws -> Provider {
        let key = ES256Key(kid: "\(name)-1")
        let jwks = folder.appendingPathComponent("\(name).json")
        try ES256Key.writeSet([key], to: jwks)
        return Provider(issuer: "https://\(name).example.com/", key: key, jwks: jwks)
    }

    static func write(_ entries: [[String: Any]], to file: URL) throws {
        try JSONSerialization.data(withJSONObject: ["issuers": entries]).write(to: file, options: .atomic)
    }

    @Test func eachCustomerBringsItsProviderAndOnlyTheOperatorsGrantOperator() async throws {
        let folder = try Self.folder()
        let acme = try Self.provider("acme", in: folder)
        let shared = try Self.provider("shared", in: folder)
        let ops = try Self.provider("ops", in: folder)
        let file = folder.appendingPathComponent("issuers.json")
        let acmeEntry: [String: Any] = [
            "issuer": acme.issuer, "jwks_file": acme.jwks.path, "audience": "roboscope", "tenant": "acme",
        ]
        let sharedEntry: [String: Any] = [
            "issuer": shared.issuer, "jwks_file": shared.jwks.path, "audience": "rs",
            "tenant_claim": "org_id",
        ]
        let opsEntry: [String: Any] = [
            "issuer": ops.issuer, "jwks_file": ops.jwks.path, "audience": "roboscope-ops",
            "operator": true,
        ]
        try Self.write([acmeEntry, sharedEntry, opsEntry], to: file)
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("issuers"),
            extraArguments: ["--auth-issuers-file", file.path])
        func get(_ path: String, _ token: String) async throws -> HTTPClient.Reply {
            try await server.client.send("GET", path, headers: Tokens.bearer(token))
        }

        // A pinned provider's token needs no tenant claim; the space it makes is acme's.
        let acmeAdmin = try acme.token(["sub": "a", "scope": "admin"], audience: "roboscope")
        let space = try await server.client.send(
            "POST", "/api/v1/spaces", json: ["key": "hull-1", "name": "n"],
            headers: Tokens.bearer(acmeAdmin))
        #expect(space.status == 201, "\(space.json)")
        let spaceID = try #require(space.json["id"]?.string)
        // The shared provider names the tenant in org_id: acme sees it, globex does not.
        let acmeViaShared = try shared.token(["sub": "s", "org_id": "acme", "scope": "read"], audience: "rs")
        let globexViaShared = try shared.token(["sub": "s", "org_id": "globex", "scope": "read"], audience: "rs")
        #expect(try await get("/api/v1/spaces/\(spaceID)", acmeViaShared).status == 200)
        #expect(try await get("/api/v1/spaces/\(spaceID)", globexViaShared).status == 404)

        // Refused: another tenant from a pinned provider, another issuer's key, another
        // audience, an unknown issuer.
        let foreign = try await get(
            "/api/v1/spaces", try acme.token(["sub": "a", "tenant": "globex"], audience: "roboscope"))
        #expect(foreign.status == 401 && foreign.json["error"]?["message"]?.string?.contains("only tenant") == true)
        let forgedKey = try Provider(issuer: acme.issuer, key: shared.key, jwks: acme.jwks)
            .token(["sub": "a"], audience: "roboscope")
        #expect(try await get("/api/v1/spaces", forgedKey).status == 401)
        #expect(try await get("/api/v1/spaces", try acme.token(["sub": "a"], audience: "rs")).status == 401)
        let stranger = try Provider(issuer: "https://stranger.example.com/", key: acme.key, jwks: acme.jwks)
            .token(["sub": "a", "tenant": "acme"], audience: "roboscope")
        let unknownIssuer = try await get("/api/v1/spaces", stranger)
        #expect(
            unknownIssuer.status == 401
                && unknownIssuer.json["error"]?["message"]?.string?.contains("not a trusted issuer") == true)

        // `operator` from a customer's provider is an unknown word; from the operators' it counts.
        let customerOperator = try acme.token(["sub": "a", "scope": "operator"], audience: "roboscope")
        #expect(try await get("/api/v1/integrity", customerOperator).status == 403)
        #expect(
            try await get(
                "/api/v1/integrity",
                try ops.token(
                    ["sub": "o", "tenant": "ops", "scope": "operator"],
                    audience: "roboscope-ops")
            ).status == 200)

        // The file changes: the shared provider goes, and comes back.
        try Self.write([acmeEntry, opsEntry], to: file)
        try await eventually("the removed provider's tokens are refused", within: 10) {
            try await get("/api/v1/spaces/\(spaceID)", acmeViaShared).status == 401
        }
        try Self.write([acmeEntry, sharedEntry, opsEntry], to: file)
        try await eventually("the provider listed again is trusted again", within: 10) {
            try await get("/api/v1/spaces/\(spaceID)", acmeViaShared).status == 200
        }
        // A file that no longer parses keeps the last good issuers.
        try Data("{not json".utf8).write(to: file)
        try await eventually("the bad file is logged", within: 10) {
            server.log().contains("issuers file reload failed")
        }
        #expect(try await get("/api/v1/spaces/\(spaceID)", acmeViaShared).status == 200)
        #expect(await server.terminate() == 0)
    }

    @Test func aDoubtfulIssuersFileRefusesTheStart() async throws {
        let folder = try Self.folder()
        let acme = try Self.provider("acme", in: folder)
        let file = folder.appendingPathComponent("issuers.json")
        let cases: [([[String: Any]], [String], String)] = [
            (
                [["issuer": acme.issuer, "jwks_file": acme.jwks.path, "audience": "a"]],
                ["--auth-jwt-secret", Tokens.secret],
                "leave out --auth-jwt-secret"
            ),
            (
                [
                    [
                        "issuer": acme.issuer, "jwks_file": acme.jwks.path, "audience": "a", "tenant": "acme",
                        "operator": true,
                    ]
                ], [],
                "an operator issuer pins no tenant"
            ),
            (
                [["issuer": acme.issuer, "jwks_url": "http://idp.example.com/jwks", "audience": "a"]], [],
                "jwks_url must be an https"
            ),
            ([["issuer": acme.issuer, "jwks_file": acme.jwks.path]], [], "audience is required"),
            (
                [
                    ["issuer": acme.issuer, "jwks_file": acme.jwks.path, "audience": "a"],
                    ["issuer": acme.issuer, "jwks_file": acme.jwks.path, "audience": "b"],
                ], [], "listed twice"
            ),
        ]
        for (entries, flags, message) in cases {
            try Self.write(entries, to: file)
            let outcome = try await CommandRunner.roboscope(
                [
                    "serve", "--auth-issuers-file", file.path,
                    "--database-url", "postgres://unused/none",
                ] + flags)
            #expect(outcome.status != 0 && outcome.output.contains(message), "\(message): \(outcome.output)")
        }
    }
}
