import Crypto
import Foundation

/// HS256 tokens for the tests of a server started with `Tokens.secret`.
enum Tokens {
    static let secret = "a-test-secret-that-is-long-enough-0123456789"

    /// The flags of a server verifying HS256 tokens signed with `secret`, whatever their
    /// `aud` and `iss` (the tests' tokens name neither; FailingClosedTests checks both).
    static func serverArguments(secret: String = secret) -> [String] {
        ["--auth-jwt-secret", secret, "--auth-allow-any-audience", "--auth-allow-any-issuer"]
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func jwt(
        _ claims: [String: Any], secret: String = secret, alg: String = "HS256", kid: String? = nil
    ) throws -> String {
        var header: [String: Any] = ["alg": alg, "typ": "JWT"]
        if let kid { header["kid"] = kid }
        let head = base64URL(try JSONSerialization.data(withJSONObject: header))
        let payload = base64URL(try JSONSerialization.data(withJSONObject: claims))
        let signature = HMAC<SHA256>.authenticationCode(
            for: Data("\(head).\(payload)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return "\(head).\(payload).\(base64URL(Data(signature)))"
    }

    /// A valid token of `tenant` with `scope` (space-separated), for five minutes.
    static func token(
        _ tenant: String, _ scope: String, sub: String = "tester", spaces: [String]? = nil
    ) throws -> String {
        var claims: [String: Any] = [
            "sub": sub, "tenant": tenant, "scope": scope, "exp": Date().timeIntervalSince1970 + 300,
        ]
        if let spaces { claims["spaces"] = spaces }
        return try jwt(claims)
    }

    static func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer \(token)"] }
}

/// ES256 keys of a JWK Set file the tests write and rewrite (a key rotation).
struct ES256Key {
    let kid: String
    let key = P256.Signing.PrivateKey()

    /// The public half as a JWK Set entry.
    var jwk: [String: Any] {
        let raw = key.publicKey.rawRepresentation
        return [
            "kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
            "x": Tokens.base64URL(raw.prefix(32)), "y": Tokens.base64URL(raw.suffix(32)),
        ]
    }

    static func writeSet(_ keys: [ES256Key], to url: URL) throws {
        let data = try JSONSerialization.data(withJSONObject: ["keys": keys.map(\.jwk)])
        try data.write(to: url, options: .atomic)
    }

    /// A JWT with `claims`, signed by this key and naming its `kid`.
    func jwt(_ claims: [String: Any]) throws -> String {
        let header = Tokens.base64URL(
            try JSONSerialization.data(withJSONObject: ["alg": "ES256", "typ": "JWT", "kid": kid]))
        let payload = Tokens.base64URL(try JSONSerialization.data(withJSONObject: claims))
        let signature = try key.signature(for: Data("\(header).\(payload)".utf8))
        return "\(header).\(payload).\(Tokens.base64URL(signature.rawRepresentation))"
    }
}
