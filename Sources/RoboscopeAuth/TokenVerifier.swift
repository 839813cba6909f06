import Foundation
import RoboscopeDomain
import RoboscopeWire
import Synchronization

/// Turns `Authorization: Bearer <token>` into a principal: a static token from the
/// tokens file (compared by SHA-256 digest), or a JWT whose signature checks against
/// one of `keys` (jwt-kit does the cryptography) and whose claims meet `rules`.
///
/// Synchronous, so that the gateway's event loops call it as they are; the keys can be
/// swapped while it serves (a JWK Set reloaded from its file or URL).
public final class TokenVerifier: Sendable {
    public let rules: ClaimRules
    /// SHA-256 (hex) of each static token → its principal.
    let staticTokens: [String: Principal]
    private let keys: Mutex<VerificationKeys>
    /// JWTs already verified, with their principals: a device sends the same token with
    /// every request until it refreshes it, and a signature checked once need not be
    /// checked again. Each use still checks `exp`; a new key set empties it (a key taken
    /// out of the set takes its tokens with it). Bounded: a full cache starts afresh.
    private let verified = Mutex<[String: Principal]>([:])
    public static let verifiedCacheLimit = 10_000
    /// Asked for fresh keys when a token names a `kid` the set lacks (rate limited by the source).
    public let keySource: KeySetSource?

    /// Tokens past this many bytes are refused before any parsing.
    public static let maxTokenBytes = 8 * 1024
    /// Revocations in force: a matching token is refused (`token_revoked`) even when cached.
    public let revocations: RevocationList
    /// Told the issuer and key ids of every new key set, so that connections of a retired key end.
    private let keyObservers = Mutex<[@Sendable (String?, Set<String>) -> Void]>([])
    /// With an issuers file: one verifier per trusted issuer (its keys, its rules), picked
    /// by the token's `iss`; this one then holds only the static tokens and the revocations.
    public let routesByIssuer: Bool
    private let routes = Mutex<[String: TokenVerifier]>([:])

    public init(
        keys: VerificationKeys, staticTokens: [String: Principal] = [:], rules: ClaimRules = ClaimRules(),
        keySource: KeySetSource? = nil, revocations: RevocationList = RevocationList(), routesByIssuer: Bool = false
    ) {
        self.routesByIssuer = routesByIssuer
        self.keys = Mutex(keys)
        self.staticTokens = staticTokens
        self.rules = rules
        self.keySource = keySource
        self.revocations = revocations
    }

    /// Replaces the JWK Set's keys (the secret stays): a reload that read a good set.
    public func replaceKeySet(_ set: KeySet) {
        keys.withLock { $0.byKID = set.keys }
        verified.withLock { $0.removeAll() }
        let kept = Set(set.keys.keys)
        for observer in keyObservers.withLock({ $0 }) { observer(rules.issuer, kept) }
    }

    /// `observer` hears the issuer (nil: any) and key ids of each key set put in force
    /// after this call, whichever issuer's.
    public func observeKeySets(_ observer: @escaping @Sendable (String?, Set<String>) -> Void) {
        keyObservers.withLock { $0.append(observer) }
    }

    /// The ids of the JWK Set keys in force (for the start-up line).
    public var keyIDs: [String] { keys.withLock { $0.keyIDs } }

    /// The trusted issuers' verifiers, by `iss` (an issuers file read or read again).
    public func setRoutes(_ verifiers: [String: TokenVerifier]) {
        let added = routes.withLock { routes in
            let known = Set(routes.values.map(ObjectIdentifier.init))
            routes = verifiers
            return verifiers.values.filter { !known.contains(ObjectIdentifier($0)) }
        }
        for route in added {
            route.observeKeySets { [self] issuer, kept in
                for observer in keyObservers.withLock({ $0 }) { observer(issuer, kept) }
            }
        }
    }

    public var routesInForce: [String: TokenVerifier] { routes.withLock { $0 } }

    /// The verifier of the issuer `token` names (its payload read before any signature:
    /// only to pick the keys that must then verify it).
    func route(for token: String) throws -> TokenVerifier {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw AuthenticationFailure("unknown token (not a JWT: expected three dot-separated parts)")
        }
        guard let payload = Self.base64URL(segments[1]), let claims = (try? JSONParser.parse(payload))?.objectValue
        else {
            throw AuthenticationFailure("malformed token claims")
        }
        guard let issuer = claims["iss"]?.stringValue else { throw AuthenticationFailure("token has no iss") }
        guard let route = routes.withLock({ $0[issuer] }) else {
            throw AuthenticationFailure("token iss \(issuer.prefix(100)) is not a trusted issuer")
        }
        return route
    }

    /// The principal of an `Authorization` header value.
    public func verify(authorization: String?, now: Date = Date()) throws -> Principal {
        guard let authorization else {
            throw AuthenticationFailure("missing Authorization: Bearer <token>", kind: .missingToken)
        }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, HeaderText.equalsIgnoringCase(parts[0], "bearer") else {
            throw AuthenticationFailure("the Authorization header must be Bearer <token>")
        }
        return try verify(token: String(HeaderText.trimmed(parts[1])), now: now)
    }

    /// `verify`, and when the token names a `kid` the set lacks, one refresh of the set
    /// (if the source allows one now) and a second try.
    public func verifyRefreshing(authorization: String?, now: Date = Date()) async throws -> Principal {
        do {
            return try verify(authorization: authorization, now: now)
        } catch is UnknownKeyID {
            let token = String(authorization?.split(separator: " ", maxSplits: 1).last ?? "")
            let holder = routesByIssuer ? try route(for: token) : self
            guard let keySource = holder.keySource else {
                throw AuthenticationFailure("token kid is not in the key set")
            }
            await keySource.refreshEarly(into: holder)
            do {
                return try verify(authorization: authorization, now: now)
            } catch let unknown as UnknownKeyID {
                throw AuthenticationFailure("token kid \(unknown.kid) is not in the key set")
            }
        }
    }

    /// The principal of a bare token (the WebSocket `auth` op), unless a revocation in
    /// force matches it.
    public func verify(token: String, now: Date = Date()) throws -> Principal {
        let principal = try principal(ofToken: token, now: now)
        if let revocation = revocations.revocation(of: principal) {
            throw AuthenticationFailure("token revoked: \(revocation.reason)", kind: .revoked)
        }
        return principal
    }

    func principal(ofToken token: String, now: Date) throws -> Principal {
        guard !token.isEmpty else { throw AuthenticationFailure("empty token") }
        guard token.utf8.count <= Self.maxTokenBytes else {
            throw AuthenticationFailure("token is over \(Self.maxTokenBytes) bytes")
        }
        guard token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw AuthenticationFailure("token holds bytes that are not printable ASCII")
        }
        if !staticTokens.isEmpty, let principal = staticTokens[Digest.sha256Hex(token)] { return principal }
        if routesByIssuer { return try route(for: token).principal(ofToken: token, now: now) }
        if let principal = verified.withLock({ $0[token] }) {
            // Its claims passed once; only time can have changed the verdict.
            guard let expiry = principal.expiresAt,
                Double(expiry.microsecondsSinceEpoch) / 1_000_000 + rules.leeway > now.timeIntervalSince1970
            else {
                verified.withLock { _ = $0.removeValue(forKey: token) }
                throw AuthenticationFailure("token expired", kind: .expired)
            }
            return principal
        }
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else {
            throw AuthenticationFailure("unknown token (not a JWT: expected three dot-separated parts)")
        }
        guard let headerData = Self.base64URL(segments[0]),
            let header = (try? JSONParser.parse(headerData))?.objectValue
        else {
            throw AuthenticationFailure("malformed token header")
        }
        guard let alg = header["alg"]?.stringValue else { throw AuthenticationFailure("token header has no alg") }
        // RFC 7515 section 4.1.11: a recipient that does not understand an extension named
        // in `crit` must refuse the token; this service understands none.
        if header["crit"] != nil {
            throw AuthenticationFailure("token header names crit extensions, which this service does not support")
        }
        let key = try keys.withLock { try $0.key(kid: header["kid"]?.stringValue, alg: alg) }
        guard let signature = Self.base64URL(segments[2]) else {
            throw AuthenticationFailure("malformed token signature")
        }
        let signingInput = Array(token.utf8.prefix(segments[0].utf8.count + 1 + segments[1].utf8.count))
        let valid = (try? key.algorithm.verify(signature, signs: signingInput)) ?? false
        guard valid else { throw AuthenticationFailure("bad signature") }
        guard let payloadData = Self.base64URL(segments[1]),
            let claims = (try? JSONParser.parse(payloadData))?.objectValue
        else {
            throw AuthenticationFailure("malformed token claims")
        }
        var principal = try rules.principal(claims, now: now.timeIntervalSince1970)
        if alg != "HS256" { principal.keyID = header["kid"]?.stringValue }
        verified.withLock { cache in
            if cache.count >= Self.verifiedCacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[token] = principal
        }
        return principal
    }

    /// The bytes of a segment in canonical base64url (RFC 7515 section 2: no padding, no
    /// `+` or `/`, unused trailing bits zero), else nil: two spellings of one signature
    /// would be two tokens for the cache and the revocation list.
    static func base64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { return nil }
        // Encoding the bytes again gives the one canonical spelling; any other is refused.
        let canonical = data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return canonical.utf8.elementsEqual(text.utf8) ? data : nil
    }
}
