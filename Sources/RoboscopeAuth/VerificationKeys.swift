import Foundation
import JWTKit
import RoboscopeDomain

/// The keys tokens are checked against: the HS256 secret and the public keys of a JWK
/// Set (RFC 7517), each pinned to one algorithm. Parsing keys and checking signatures
/// is jwt-kit's; this type only says which key a token may use.
public struct VerificationKeys: Sendable {
    struct Key: Sendable {
        /// The one `alg` a token signed with this key may name.
        let alg: String
        let algorithm: any JWTAlgorithm
    }

    /// The HS256 key of `--auth-jwt-secret`, for tokens that name no `kid` of the set.
    var secret: Key?
    /// The JWK Set's keys by `kid`.
    var byKID: [String: Key] = [:]

    public init() {}

    /// The JWK Set's key ids, sorted (for the start-up line; never a key).
    public var keyIDs: [String] { byKID.keys.sorted() }
    public var hasSecret: Bool { secret != nil }

    /// A JWK Set's keys, with the secret (if any).
    public init(set: KeySet, secret: VerificationKeys?) {
        self.secret = secret?.secret
        byKID = set.keys
    }

    /// The key a token with this header must verify with: the set's key of its `kid`,
    /// else the secret for an HS256 token. `alg` must be the key's own (no `none`, no
    /// algorithm confusion: a public key is never used as an HMAC secret).
    func key(kid: String?, alg: String) throws -> Key {
        if let kid, let key = byKID[kid] {
            guard key.alg == alg else {
                throw AuthenticationFailure("token alg \(alg.prefix(16)) is not its key's (\(key.alg))")
            }
            return key
        }
        if alg == "HS256", let secret { return secret }
        if alg.lowercased() == "none" { throw AuthenticationFailure("unsigned tokens (alg none) are refused") }
        if let kid { throw UnknownKeyID(kid: String(kid.prefix(100))) }
        throw AuthenticationFailure("token names no kid and is not HS256")
    }

    /// An HS256 secret (at least 32 bytes, checked by the caller).
    public static func withSecret(_ secret: String) async -> VerificationKeys {
        let collection = JWTKeyCollection()
        await collection.add(hmac: HMACKey(from: Data(secret.utf8)), digestAlgorithm: .sha256)
        var keys = VerificationKeys()
        if let algorithm = try? await collection.getKey() {
            keys.secret = Key(alg: "HS256", algorithm: algorithm)
        }
        return keys
    }

    /// The signing keys of a JWK Set document: each needs a `kid`; keys for encryption
    /// (`use: enc`) and of types jwt-kit does not know are skipped and named in
    /// `skipped`. A document that is not a JWK Set, or has no usable key, is refused.
    public static func parseJWKS(_ data: Data) async throws -> KeySet {
        guard case .object(let document)? = try? JSONParser.parse(data), case .array(let entries)? = document["keys"]
        else {
            throw AuthenticationFailure("not a JWK Set: expected {\"keys\": [...]}")
        }
        var keys: [String: Key] = [:]
        var skipped: [String] = []
        for (index, entry) in entries.enumerated() {
            let fields = entry.objectValue ?? [:]
            let name = fields["kid"]?.stringValue ?? "#\(index)"
            if fields["use"]?.stringValue == "enc" { skipped.append("\(name): an encryption key"); continue }
            guard let kid = fields["kid"]?.stringValue, !kid.isEmpty else {
                skipped.append("\(name): no kid"); continue
            }
            guard let alg = pinnedAlgorithm(fields) else {
                let (type, algorithm) = (fields["kty"]?.stringValue ?? "?", fields["alg"]?.stringValue ?? "?")
                skipped.append("\(kid): unsupported key type \(type) / alg \(algorithm)")
                continue
            }
            do {
                let jwk = try JSONDecoder().decode(JWK.self, from: JSONEncoder().encode(entry))
                let collection = JWTKeyCollection()
                try await collection.add(jwk: jwk)
                let algorithm = try await collection.getKey(for: JWKIdentifier(string: kid), alg: alg)
                keys[kid] = Key(alg: alg, algorithm: algorithm)
            } catch {
                skipped.append("\(kid): \(error)")
            }
        }
        guard !keys.isEmpty else {
            throw AuthenticationFailure(
                "the JWK Set has no usable signing key"
                    + (skipped.isEmpty ? "" : " (\(skipped.joined(separator: "; ")))"))
        }
        return KeySet(keys: keys, skipped: skipped)
    }

    /// The algorithm a key serves: its `alg` when it names one we accept, else the one its
    /// type implies (RSA: RS256, EC P-256: ES256, OKP Ed25519: EdDSA).
    static func pinnedAlgorithm(_ fields: JSONObject) -> String? {
        let accepted: Set<String> = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "ES512", "EdDSA"]
        if let alg = fields["alg"]?.stringValue { return accepted.contains(alg) ? alg : nil }
        switch (fields["kty"]?.stringValue, fields["crv"]?.stringValue) {
        case ("RSA"?, _): return "RS256"
        case ("EC"?, "P-256"?): return "ES256"
        case ("EC"?, "P-384"?): return "ES384"
        case ("EC"?, "P-521"?): return "ES512"
        case ("OKP"?, "Ed25519"?): return "EdDSA"
        default: return nil
        }
    }

}

/// The usable keys of one JWK Set document, and what was skipped in it.
public struct KeySet: Sendable {
    let keys: [String: VerificationKeys.Key]
    public let skipped: [String]
    public var count: Int { keys.count }
    public var keyIDs: [String] { keys.keys.sorted() }
}

/// A token naming a `kid` the set does not hold (yet): a rotated key the set may learn
/// on its next refresh.
struct UnknownKeyID: Error {
    var kid: String
}
