import Crypto
import Foundation
import RoboscopeDomain

/// Checks `Authorization: Bearer <token>`: an HS256 JWT signed with the configured
/// secret (`sub` is the subject, optional `exp`/`nbf`, `scope: "read"` for read-only),
/// or one of the static API tokens from a file. Tokens are compared by SHA-256 digest,
/// so the file may hold digests instead of tokens.
public struct TokenVerifier: Sendable {
    /// The HS256 secret's bytes (a `SymmetricKey` is made per check: it is not Sendable).
    let jwtSecret: Data?
    /// SHA-256 (hex) of each static token → what it grants.
    let staticTokens: [String: Credentials]

    public init(jwtSecret: String?, staticTokens: [String: Credentials] = [:]) {
        self.jwtSecret = jwtSecret.map { Data($0.utf8) }
        self.staticTokens = staticTokens
    }

    /// Reads a tokens file: `[{"token": "…" | "token_sha256": "…", "subject": "…", "scope": "read" | "write"}]`.
    public static func staticTokens(fromFile path: String) throws -> [String: Credentials] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard case .array(let entries)? = try? JSONParser.parse(data) else {
            throw AuthenticationFailure("\(path): expected a JSON array of tokens")
        }
        var tokens: [String: Credentials] = [:]
        for (index, entry) in entries.enumerated() {
            let fields = entry.objectValue ?? [:]
            guard let subject = fields["subject"]?.stringValue, !subject.isEmpty else {
                throw AuthenticationFailure("\(path): token \(index) has no subject")
            }
            let scope = Credentials.Scope(rawValue: fields["scope"]?.stringValue ?? "write") ?? .read
            if let token = fields["token"]?.stringValue, !token.isEmpty {
                tokens[Self.digest(token)] = Credentials(subject: subject, scope: scope)
            } else if let digest = fields["token_sha256"]?.stringValue, digest.count == 64 {
                tokens[digest.lowercased()] = Credentials(subject: subject, scope: scope)
            } else {
                throw AuthenticationFailure("\(path): token \(index) needs token or token_sha256")
            }
        }
        return tokens
    }

    /// The credentials of an `Authorization` header value.
    public func verify(authorization: String?, now: Date = Date()) throws -> Credentials {
        guard let authorization else { throw AuthenticationFailure("missing Authorization: Bearer <token>") }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw AuthenticationFailure("the Authorization header must be Bearer <token>")
        }
        let token = String(parts[1]).trimmingCharacters(in: .whitespaces)
        if let credentials = staticTokens[Self.digest(token)] { return credentials }
        guard let jwtSecret, token.split(separator: ".", omittingEmptySubsequences: false).count == 3 else {
            throw AuthenticationFailure("unknown token")
        }
        return try verifyJWT(token, key: SymmetricKey(data: jwtSecret), now: now)
    }

    func verifyJWT(_ token: String, key: SymmetricKey, now: Date) throws -> Credentials {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard let headerData = Self.base64URL(parts[0]), let payloadData = Self.base64URL(parts[1]),
              let signature = Self.base64URL(parts[2]),
              let header = (try? JSONParser.parse(headerData))?.objectValue,
              let claims = (try? JSONParser.parse(payloadData))?.objectValue else {
            throw AuthenticationFailure("malformed token")
        }
        guard header["alg"]?.stringValue == "HS256" else { throw AuthenticationFailure("only HS256 tokens are accepted") }
        let signed = Data((parts[0] + "." + parts[1]).utf8)
        guard HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: signed, using: key) else {
            throw AuthenticationFailure("bad signature")
        }
        let seconds = now.timeIntervalSince1970
        if let expiry = claims["exp"]?.doubleValue, expiry <= seconds {
            throw AuthenticationFailure("token expired")
        }
        if let notBefore = claims["nbf"]?.doubleValue, notBefore > seconds {
            throw AuthenticationFailure("token not valid yet")
        }
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty, subject.count <= 200 else {
            throw AuthenticationFailure("token has no sub")
        }
        let scope = claims["scope"]?.stringValue.flatMap(Credentials.Scope.init(rawValue:)) ?? .write
        return Credentials(subject: subject, scope: scope)
    }

    static func base64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    static func digest(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
