import Crypto
import Foundation
import JWTKit
import RoboscopeAuth
import RoboscopeDomain
import Testing

/// Every refusal of docs/security.md ("The principal", "Failing closed") on the verifier
/// itself, with tokens jwt-kit signs: ES256, RS256 and EdDSA from a JWK Set, HS256 from
/// the secret. Time is passed in (`now:`), never waited for.
@Suite struct TokenVerifierTests {
    static let secret = "a-unit-test-secret-that-is-long-enough-42"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    /// A throwaway RSA key made for these tests (openssl genrsa 2048).
    static let rsaPEM = """
        -----BEGIN RSA PRIVATE KEY-----
        MIIEowIBAAKCAQEAxNw4BrTyFxEcW/O5bPK6GFmPBj/sRqsXSg78mweedgBqAA4H
        HoQV+2yIuSH5khxVBpl5JZy9iNdOcDJXP63eY1E9V0YikZCevW9a9bYROYQ//XyC
        PEfsRhbEFRDW9lXCSefyTCi1TZe+MZ+yKClAvEW2A4uTAm4ZijI5JKVTK12eJtOe
        LZT4d4B7j1P9eLnmBibm5ZYPX6C2tfNy0uBM44Wn0s9siFP1H69BnsL+5XWX5ry/
        hSOs1ieL5D9+blH/OKqgNd+4KBXMYeqtRA/OtPtkcU8kEMalwIngUuNokomlHpzF
        ORzqN9RgDDN1UstcD+fBPa/7q8Chiyeu280nxQIDAQABAoIBAB25L3dpxjzP31ON
        7PMjghAvo436xFrWNeW/dgoVYCpqfRbFh3Mm1+fWtx0W4WcbgoYE0bspW5/H/Iap
        vy00/CVMTKH7C7ilWKZ7JAWCCD9CNeQ48rQV2vmpMdGJcZ+Pis6caCPyKI/O5893
        0I9KTUUwFF+cKSX+iDoqw6CCGtjq3Y5n9djduSZB11TBbowClb+P0Sy5NF52ho6x
        H3yNtQScRgGYdvmSCYvwx+1tW+4DCnyTVSvrL+ien2Yb5ht3SvCLU/GsW3vDO0sr
        a3+6FlimZAogomP0EjqxaKA+QcWEfi7ImExBgiWKz1QNmmFR+M41mKlwgBQ+sqBC
        6ghkDDkCgYEA7mlugIwtoc+2aiMNk8bYROMwZMcfDMzUB9HsiG7ncxOvbrUlpTvl
        EMp7g5eiiUlu9GcigGq64gFDYGLquNeU7juu8GQxmK7E7ieOws2W0vipFMfD01wh
        zQ9wv8EvTgEeVwu+cP0CAhA2drRypGNyE0o14oI4NH4fasPE1dvAmmkCgYEA02IO
        lxElKPsOLXpAY9l5OGgvgJ+4MjQ+Z7N4DSMdbJHf6/WBdOylPm3clHD4d2/M2xeb
        FLaniLDgx8Xhr4FEqKD6nQsMOypqre3q64ATMScx6MkpGHW2tk1p42MEEG601OZU
        sXb8bUd1bT4/BECHgYqdTKnpA9HqlmSE4TtyXv0CgYEAk+VFjmrnF9zxrQ/HqWeN
        29YPvESl51vdIGjCUbRy0blhd8zZ6JGqPOtPCcf0JTQvp1+fUIhlHDRqZo2WTEo3
        8j2F/Uw6VBv+wDo73m6I5KEqymBOA3zA3yN37wxZWwtoldkML61UJJGIJ8Uy5PVn
        272KhdQAJ9ghhyqgnYXwChkCgYAIOzFGQKypw9zxeGk5eiZ2Q9hVseKCUfZ8I0jx
        egSTTbrifVTlMLHelHiabyu9uuTHQ0wOqm4rrHeUT+hR5T6/MkWQB/YZ97TfwPv8
        36ffqh8PaYXoJe1PfAQ7joeB/E2eXLm/j1qVBstTzbC2gazFJpipe5RPScVQxelG
        vAHgIQKBgCnGOiXdfQx9OwJSDgk7fCFPrlf32KFOaJak8DUegprtivUcDeiakl+A
        vlvF9rwVE4x6AMEdAHrSpij01jtp+LTN51a9JTbBW0mBtuNq8n0FdEMUP+dp/8F4
        KRZhb2nm1x660zzG9VocVaf9wyUNvwXcPPtVo44qv7/on5TYUmWv
        -----END RSA PRIVATE KEY-----
        """

    /// The claims a test signs; nil fields are left out of the token.
    struct Claims: JWTPayload {
        var sub: String? = "fitter-1"
        var tenant: String? = "acme"
        var org_id: String?
        var scope: String? = "write"
        var spaces: [String]?
        var exp: Double? = TokenVerifierTests.now.timeIntervalSince1970 + 300
        var nbf: Double?
        var aud: [String]?
        var iss: String?

        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    /// Signing keys of every type, their public halves as a JWK Set, and a verifier over it.
    struct Keys {
        let signers = JWTKeyCollection()
        let ec = ES256PrivateKey()
        let ed: EdDSA.PrivateKey
        let rsa: JWTKit.Insecure.RSA.PrivateKey
        let jwks: Data

        init() async throws {
            ed = try EdDSA.PrivateKey(curve: .ed25519)
            // A fixed key: generating 2048-bit RSA keys in every test held the cooperative
            // pool's two threads for seconds on a loaded machine, and starved other suites.
            rsa = try JWTKit.Insecure.RSA.PrivateKey(pem: TokenVerifierTests.rsaPEM)
            await signers.add(ecdsa: ec, kid: "ec-1")
            await signers.add(eddsa: ed, kid: "ed-1")
            await signers.add(rsa: rsa, digestAlgorithm: .sha256, kid: "rsa-1")
            await signers.add(
                hmac: HMACKey(from: Data(TokenVerifierTests.secret.utf8)), digestAlgorithm: .sha256, kid: "hs")
            let (n, e) = try rsa.publicKey.getKeyPrimitives()
            let set: [String: Any] = [
                "keys": [
                    [
                        "kty": "EC", "crv": "P-256", "kid": "ec-1", "use": "sig", "x": ec.parameters!.x,
                        "y": ec.parameters!.y,
                    ],
                    [
                        "kty": "OKP", "crv": "Ed25519", "kid": "ed-1",
                        "x": TokenVerifierTests.base64URL(ed.publicKey.rawRepresentation),
                    ],
                    [
                        "kty": "RSA", "kid": "rsa-1", "alg": "RS256", "n": TokenVerifierTests.base64URL(n),
                        "e": TokenVerifierTests.base64URL(e),
                    ],
                    ["kty": "oct", "kid": "symmetric", "k": "c2VjcmV0"],
                    [
                        "kty": "RSA", "kid": "enc-1", "use": "enc", "n": TokenVerifierTests.base64URL(n),
                        "e": TokenVerifierTests.base64URL(e),
                    ],
                ]
            ]
            jwks = try JSONSerialization.data(withJSONObject: set)
        }

        func verifier(_ rules: ClaimRules = ClaimRules()) async throws -> TokenVerifier {
            let set = try await VerificationKeys.parseJWKS(jwks)
            return TokenVerifier(
                keys: VerificationKeys(set: set, secret: await VerificationKeys.withSecret(TokenVerifierTests.secret)),
                rules: rules)
        }

        func sign(_ claims: Claims = Claims(), kid: String) async throws -> String {
            var header = JWTHeader()
            if kid == "hs" { header.alg = "HS256" }
            let token = try await signers.sign(claims, kid: JWKIdentifier(string: kid), header: header)
            // The secret's tokens name no kid.
            return kid == "hs"
                ? try TokenVerifierTests.reheader(
                    token, ["alg": "HS256", "typ": "JWT"], secret: TokenVerifierTests.secret) : token
        }
    }

    static func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
            of: "/", with: "_"
        )
        .replacingOccurrences(of: "=", with: "")
    }

    /// `token`'s claims under a new header, HMAC-signed with `secret` (nil: unsigned).
    static func reheader(_ token: String, _ header: [String: String], secret: String?) throws -> String {
        let payload = token.split(separator: ".")[1]
        let head = base64URL(try JSONSerialization.data(withJSONObject: header, options: .sortedKeys))
        let input = "\(head).\(payload)"
        guard let secret else { return input + "." }
        return "\(input).\(mac(input, secret: secret))"
    }

    func refusal(_ verifier: TokenVerifier, _ token: String) -> String? {
        do {
            _ = try verifier.verify(token: token, now: Self.now)
            return nil
        } catch let failure as AuthenticationFailure {
            return failure.reason
        } catch {
            return "\(type(of: error))"
        }
    }

    @Test func tokensOfEveryKeyTypeMakeTheirPrincipal() async throws {
        let keys = try await Keys()
        let verifier = try await keys.verifier()
        let space = UUID().uuidString.lowercased()
        for kid in ["ec-1", "ed-1", "rsa-1", "hs"] {
            var claims = Claims()
            claims.scope = "openid admin profile"
            claims.spaces = [space]
            let principal = try verifier.verify(token: try await keys.sign(claims, kid: kid), now: Self.now)
            #expect(principal.subject == "fitter-1", "\(kid)")
            #expect(principal.tenant == "acme")
            #expect(
                principal.scopes.description == "read write admin",
                "unknown words ignored, admin includes write and read")
            #expect(principal.spaces == [EntityID(space)!])
            #expect(
                principal.expiresAt
                    == Timestamp(microsecondsSinceEpoch: Int64(Self.now.timeIntervalSince1970 + 300) * 1_000_000))
        }
    }

    @Test func theJWKSetSkipsWhatCannotSign() async throws {
        let set = try await VerificationKeys.parseJWKS(try await Keys().jwks)
        #expect(set.keyIDs == ["ec-1", "ed-1", "rsa-1"])
        #expect(set.skipped.contains { $0.hasPrefix("symmetric: unsupported key type oct") })
        #expect(set.skipped.contains { $0.hasPrefix("enc-1: an encryption key") })
        await #expect(throws: AuthenticationFailure.self) {
            _ = try await VerificationKeys.parseJWKS(
                Data(#"{"keys": [{"kty": "oct", "kid": "a", "k": "c2VjcmV0"}]}"#.utf8))
        }
        await #expect(throws: AuthenticationFailure.self) {
            _ = try await VerificationKeys.parseJWKS(Data("[1, 2]".utf8))
        }
    }

    @Test func unsignedAndAlgorithmConfusedTokensAreRefused() async throws {
        let keys = try await Keys()
        let verifier = try await keys.verifier()
        let good = try await keys.sign(kid: "ec-1")
        #expect(refusal(verifier, try Self.reheader(good, ["alg": "none"], secret: nil))?.contains("alg none") == true)
        #expect(
            refusal(verifier, try Self.reheader(good, ["alg": "none", "kid": "ec-1"], secret: nil))?.contains(
                "not its key's") == true)
        // The RSA public key (its PEM, and its modulus) used as an HMAC secret with the RSA key's kid.
        let pem = keys.rsa.publicKey.pemRepresentation
        let (n, _) = try keys.rsa.publicKey.getKeyPrimitives()
        for secret in [pem, Self.base64URL(n)] {
            let confused = try Self.reheader(good, ["alg": "HS256", "kid": "rsa-1"], secret: secret)
            #expect(refusal(verifier, confused)?.contains("not its key's") == true)
        }
        // An ES256 token presented under the EdDSA key's kid.
        let swapped =
            try Self.reheader(good, ["alg": "ES256", "kid": "ed-1"], secret: nil).dropLast() + "."
            + good.split(separator: ".")[2]
        #expect(refusal(verifier, String(swapped))?.contains("not its key's") == true)
        // A signature from another key of the same type.
        let stranger = JWTKeyCollection()
        await stranger.add(ecdsa: ES256PrivateKey(), kid: "ec-1")
        #expect(
            refusal(verifier, try await stranger.sign(Claims(), kid: JWKIdentifier(string: "ec-1"))) == "bad signature")
        #expect(
            refusal(
                verifier, try Self.reheader(good, ["alg": "HS256"], secret: "another-secret-that-is-long-enough-000"))
                == "bad signature")
    }

    @Test func anUnknownKidIsAskedOfTheKeySetNotGuessed() async throws {
        let keys = try await Keys()
        let verifier = try await keys.verifier()
        let rotated = JWTKeyCollection()
        await rotated.add(ecdsa: ES256PrivateKey(), kid: "ec-2")
        #expect(
            refusal(verifier, try await rotated.sign(Claims(), kid: JWKIdentifier(string: "ec-2"))) == "UnknownKeyID")
        // Without a key source to ask, the refreshing path says so.
        await #expect(throws: AuthenticationFailure("token kid is not in the key set")) {
            _ = try await verifier.verifyRefreshing(
                authorization: "Bearer " + (try await rotated.sign(Claims(), kid: JWKIdentifier(string: "ec-2"))),
                now: Self.now)
        }
    }

    @Test func timeClaimsHoldWithinTheLeewayOnly() async throws {
        let keys = try await Keys()
        var rules = ClaimRules()
        rules.leeway = 60
        let verifier = try await keys.verifier(rules)
        let t = Self.now.timeIntervalSince1970
        func claims(exp: Double?, nbf: Double? = nil) -> Claims {
            var claims = Claims()
            claims.exp = exp
            claims.nbf = nbf
            return claims
        }
        #expect(
            refusal(verifier, try await keys.sign(claims(exp: t - 30), kid: "ec-1")) == nil, "expired within the leeway"
        )
        #expect(refusal(verifier, try await keys.sign(claims(exp: t - 61), kid: "ec-1")) == "token expired")
        #expect(refusal(verifier, try await keys.sign(claims(exp: nil), kid: "rsa-1")) == "token has no exp")
        #expect(
            refusal(verifier, try await keys.sign(claims(exp: t + 300, nbf: t + 30), kid: "ed-1")) == nil,
            "nbf within the leeway")
        #expect(
            refusal(verifier, try await keys.sign(claims(exp: t + 300, nbf: t + 61), kid: "ed-1"))
                == "token not valid yet (nbf)")
    }

    /// Issue 45: `exp: 1e13` crashed the process (microseconds past `Int64`), and
    /// `exp: 9223372036852` the WebSocket upgrade. Numeric dates outside 0 ... year 9999
    /// are 401, as are `nbf` and `iat` there, and dates that are not numbers.
    @Test func numericDatesOutsideTheYears0To9999AreRefused() async throws {
        let keys = try await Keys()
        let verifier = try await keys.verifier()
        for exp in [1e13, 9_223_372_036_852, 253_402_300_800, -1, 1e300] {
            var claims = Claims()
            claims.exp = exp
            let refused = refusal(verifier, try await keys.sign(claims, kid: "ec-1"))
            #expect(refused?.hasPrefix("token exp is outside") == true, "\(exp)")
        }
        var farNotBefore = Claims()
        farNotBefore.nbf = 1e13
        let notBefore = refusal(verifier, try await keys.sign(farNotBefore, kid: "ec-1"))
        #expect(notBefore?.hasPrefix("token nbf is outside") == true)
        let header = ["alg": "HS256", "typ": "JWT"]
        let payload: [String: Any] = [
            "sub": "a", "tenant": "acme", "exp": Self.now.timeIntervalSince1970 + 60,
            "iat": -5,
        ]
        let issuedAt = refusal(verifier, try Self.token(header, payload, secret: Self.secret))
        #expect(issuedAt?.hasPrefix("token iat is outside") == true)
        let textual: [String: Any] = ["sub": "a", "tenant": "acme", "exp": "tomorrow"]
        #expect(refusal(verifier, try Self.token(header, textual, secret: Self.secret)) == "token exp is not a number")
        // The last second of 9999 is still a date.
        var last = Claims()
        last.exp = 253_402_300_799
        let principal = try verifier.verify(token: try await keys.sign(last, kid: "ec-1"), now: Self.now)
        #expect(principal.expiresAt == Timestamp(microsecondsSinceEpoch: 253_402_300_799 * 1_000_000))
    }

    @Test func critHeadersNonCanonicalSegmentsAndControlCharactersInSubAreRefused() async throws {
        let keys = try await Keys()
        let verifier = try await keys.verifier()
        let payload: [String: Any] = ["sub": "a", "tenant": "acme", "exp": Self.now.timeIntervalSince1970 + 60]
        let crit: [String: Any] = ["alg": "HS256", "crit": ["b64"], "b64": false]
        #expect(refusal(verifier, try Self.token(crit, payload, secret: Self.secret))?.contains("crit") == true)
        let good = try Self.token(["alg": "HS256"], payload, secret: Self.secret)
        #expect(refusal(verifier, good) == nil)
        let parts = good.split(separator: ".").map(String.init)
        // Padding, the standard alphabet, and non-zero unused bits: other spellings of the
        // same bytes.
        let padded = parts[2] + "="
        // 32 bytes are 43 characters, whose last two bits are unused: set one.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var lastBits = Array(parts[2])
        lastBits[lastBits.count - 1] = alphabet[alphabet.firstIndex(of: lastBits[lastBits.count - 1])! ^ 1]
        let standard =
            parts[2].contains("-") || parts[2].contains("_")
            ? parts[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            : parts[2] + "=="
        for signature in [padded, String(lastBits), standard] {
            #expect(
                refusal(verifier, "\(parts[0]).\(parts[1]).\(signature)") == "malformed token signature",
                "\(signature)")
        }
        // Claims padded, and signed as they are: the signature holds, the spelling does not.
        let paddedInput = "\(parts[0]).\(parts[1])="
        let paddedToken = "\(paddedInput).\(Self.mac(paddedInput, secret: Self.secret))"
        #expect(refusal(verifier, paddedToken) == "malformed token claims")
        #expect(refusal(verifier, "\(parts[0])=.\(parts[1]).\(parts[2])") == "malformed token header")
        for sub in ["a\nb", "tab\there", "bell\u{7}", "c1\u{85}"] {
            var claims = payload
            claims["sub"] = sub
            #expect(
                refusal(verifier, try Self.token(["alg": "HS256"], claims, secret: Self.secret))
                    == "token sub must hold no control characters")
        }
    }

    /// A token with any header and claims, HMAC-signed with `secret`.
    static func token(_ header: [String: Any], _ claims: [String: Any], secret: String) throws -> String {
        let head = base64URL(try JSONSerialization.data(withJSONObject: header, options: .sortedKeys))
        let body = base64URL(try JSONSerialization.data(withJSONObject: claims, options: .sortedKeys))
        return "\(head).\(body).\(mac("\(head).\(body)", secret: secret))"
    }

    /// The HS256 signature of `input` with `secret`, in base64url.
    static func mac(_ input: String, secret: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return base64URL(Data(code))
    }

    @Test func audienceAndIssuerMustMatchWhenConfigured() async throws {
        let keys = try await Keys()
        var rules = ClaimRules()
        rules.audience = "roboscope"
        rules.issuer = "https://id.example.com/"
        let verifier = try await keys.verifier(rules)
        var claims = Claims()
        claims.aud = ["account", "roboscope"]
        claims.iss = "https://id.example.com/"
        #expect(refusal(verifier, try await keys.sign(claims, kid: "ec-1")) == nil)
        var wrongAudience = claims
        wrongAudience.aud = ["account"]
        #expect(
            refusal(verifier, try await keys.sign(wrongAudience, kid: "ec-1")) == "token aud does not name roboscope")
        var noAudience = claims
        noAudience.aud = nil
        #expect(refusal(verifier, try await keys.sign(noAudience, kid: "ec-1")) == "token aud does not name roboscope")
        var wrongIssuer = claims
        wrongIssuer.iss = "https://evil.example.com/"
        #expect(
            refusal(verifier, try await keys.sign(wrongIssuer, kid: "ec-1"))
                == "token iss is not https://id.example.com/")
    }

    @Test func badClaimsAreRefusedNamingTheClaim() async throws {
        let keys = try await Keys()
        let verifier = try await keys.verifier()
        func signed(_ change: (inout Claims) -> Void) async throws -> String {
            var claims = Claims()
            change(&claims)
            return try await keys.sign(claims, kid: "ec-1")
        }
        #expect(
            refusal(verifier, try await signed { $0.tenant = String(repeating: "t", count: 300) })?.hasPrefix(
                "token tenant must be") == true)
        #expect(
            refusal(verifier, try await signed { $0.tenant = "acme corp" })?.hasPrefix("token tenant must be") == true)
        #expect(refusal(verifier, try await signed { $0.tenant = nil })?.hasPrefix("token tenant must be") == true)
        #expect(refusal(verifier, try await signed { $0.sub = nil })?.hasPrefix("token sub must be") == true)
        #expect(
            refusal(verifier, try await signed { $0.sub = String(repeating: "s", count: 201) })?.hasPrefix(
                "token sub must be") == true)
        #expect(
            refusal(verifier, try await signed { $0.spaces = ["hull-7"] })
                == "token spaces must be an array of space ids (UUIDs)")
        // No known scope word: read only.
        let reader = try verifier.verify(token: try await signed { $0.scope = "openid email" }, now: Self.now)
        #expect(reader.scopes.description == "read")
        #expect(
            try verifier.verify(token: try await signed { $0.scope = nil }, now: Self.now).scopes.description == "read")
    }

    @Test func theTenantClaimNameIsASetting() async throws {
        let keys = try await Keys()
        var rules = ClaimRules()
        rules.tenantClaim = "org_id"
        let verifier = try await keys.verifier(rules)
        var claims = Claims()
        claims.tenant = "ignored"
        claims.org_id = "org_5f2a"
        #expect(
            try verifier.verify(token: try await keys.sign(claims, kid: "rsa-1"), now: Self.now).tenant == "org_5f2a")
        claims.org_id = nil
        #expect(refusal(verifier, try await keys.sign(claims, kid: "rsa-1"))?.hasPrefix("token org_id must be") == true)
    }

    @Test func malformedOversizedAndBinaryTokensAreRefusedBeforeParsing() async throws {
        let verifier = try await Keys().verifier()
        #expect(refusal(verifier, "") == "empty token")
        #expect(refusal(verifier, String(repeating: "a", count: 8 * 1024 + 1)) == "token is over 8192 bytes")
        #expect(refusal(verifier, "abc\u{0}.def.ghi") == "token holds bytes that are not printable ASCII")
        #expect(refusal(verifier, "a.b") == "unknown token (not a JWT: expected three dot-separated parts)")
        #expect(refusal(verifier, "!!!.e30.sig") == "malformed token header")
        #expect(
            refusal(verifier, Self.base64URL(Data(#"{"typ":"JWT"}"#.utf8)) + ".e30.sig") == "token header has no alg")
        #expect(throws: AuthenticationFailure.self) { try verifier.verify(authorization: "Basic eDp5", now: Self.now) }
        #expect(throws: AuthenticationFailure.self) { try verifier.verify(authorization: nil, now: Self.now) }
    }

    @Test func aVerifiedTokenIsRememberedUntilItExpiresOrItsKeyLeavesTheSet() async throws {
        let keys = try await Keys()
        let verifier = try await keys.verifier()
        let token = try await keys.sign(kid: "ec-1")
        let first = try verifier.verify(token: token, now: Self.now)
        #expect(try verifier.verify(token: token, now: Self.now.addingTimeInterval(200)) == first, "remembered")
        // exp is now + 300, the leeway 60: past 360 s the remembered token is refused too.
        #expect(refusal(verifier, token) == nil)
        #expect(throws: AuthenticationFailure("token expired", kind: .expired)) {
            try verifier.verify(token: token, now: Self.now.addingTimeInterval(361))
        }
        // A new key set without the token's key: the token is checked again, and refused.
        let again = try await keys.sign(Claims(sub: "fitter-2"), kid: "ed-1")
        _ = try verifier.verify(token: again, now: Self.now)
        let onlyEC = try JSONSerialization.jsonObject(with: keys.jwks) as! [String: Any]
        let ecKeys = (onlyEC["keys"] as! [[String: Any]]).filter { $0["kid"] as? String == "ec-1" }
        verifier.replaceKeySet(
            try await VerificationKeys.parseJWKS(try JSONSerialization.data(withJSONObject: ["keys": ecKeys])))
        #expect(refusal(verifier, again) == "UnknownKeyID")
    }
}
