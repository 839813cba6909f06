import ArgumentParser
import Foundation
import Logging
import RoboscopeAuth
import RoboscopeDomain

/// Authentication flags of `serve`: off unless a JWT secret, a JWK Set or a tokens file
/// is given. It fails closed (docs/security.md): a short secret, the placeholder secret
/// deploy/ ships, an authentication variable set but empty, a tokens file or JWK Set
/// that cannot be read all refuse to start, naming the setting.
struct AuthOptions: ParsableArguments {
    @Option(name: Settings.authJWTSecret.name, help: Settings.authJWTSecret.help) var jwtSecretFlag: String?
    @Option(name: Settings.authTokensFile.name, help: Settings.authTokensFile.help) var tokensFileFlag: String?
    @Option(name: Settings.authJWKSFile.name, help: Settings.authJWKSFile.help) var jwksFileFlag: String?
    @Option(name: Settings.authJWKSURL.name, help: Settings.authJWKSURL.help) var jwksURLFlag: String?
    @Option(name: Settings.authJWKSRefresh.name, help: Settings.authJWKSRefresh.help) var jwksRefreshFlag: Int?
    @Option(name: Settings.authTenantClaim.name, help: Settings.authTenantClaim.help) var tenantClaimFlag: String?
    @Option(name: Settings.authLeeway.name, help: Settings.authLeeway.help) var leewayFlag: Int?
    @Option(name: Settings.authAudience.name, help: Settings.authAudience.help) var audienceFlag: String?
    @Option(name: Settings.authIssuer.name, help: Settings.authIssuer.help) var issuerFlag: String?
    @Option(name: Settings.authIssuersFile.name, help: Settings.authIssuersFile.help) var issuersFileFlag: String?
    @Option(name: Settings.defaultTenant.name, help: Settings.defaultTenant.help) var defaultTenantFlag: String?
    @Flag(
        name: .customLong("auth-allow-any-audience"),
        help: "accept JWTs whatever their aud (a warning at every start; env ROBOSCOPE_AUTH_ALLOW_ANY_AUDIENCE=true)")
    var allowAnyAudienceFlag = false
    @Flag(
        name: .customLong("auth-allow-any-issuer"),
        help: "accept JWTs whatever their iss (a warning at every start; env ROBOSCOPE_AUTH_ALLOW_ANY_ISSUER=true)")
    var allowAnyIssuerFlag = false

    /// The secret deploy/kubernetes ships, which must be replaced.
    static let placeholderSecrets: Set<String> = ["change-me-to-at-least-32-random-bytes-of-secret"]

    var jwtSecret: String? { try? Settings.authJWTSecret.resolve(jwtSecretFlag) }
    var tokensFile: String? { try? Settings.authTokensFile.resolve(tokensFileFlag) }
    var jwksFile: String? { try? Settings.authJWKSFile.resolve(jwksFileFlag) }
    var jwksURL: String? { try? Settings.authJWKSURL.resolve(jwksURLFlag) }
    var issuersFile: String? { try? Settings.authIssuersFile.resolve(issuersFileFlag) }
    var isOn: Bool { jwtSecret != nil || tokensFile != nil || jwksFile != nil || jwksURL != nil || issuersFile != nil }
    /// JWTs are verified (a secret or a JWK Set), not only static tokens.
    var verifiesJWTs: Bool { jwtSecret != nil || jwksFile != nil || jwksURL != nil }
    var allowAnyAudience: Bool { allowAnyAudienceFlag || Environment.isTrue("ROBOSCOPE_AUTH_ALLOW_ANY_AUDIENCE") }
    var allowAnyIssuer: Bool { allowAnyIssuerFlag || Environment.isTrue("ROBOSCOPE_AUTH_ALLOW_ANY_ISSUER") }

    /// The secret compared as an operator may have pasted it: a trailing newline or
    /// another case of the placeholder is still the placeholder.
    static func isPlaceholder(_ secret: String) -> Bool {
        placeholderSecrets.contains(secret.trimmingCharacters(in: .whitespacesAndNewlines).lowercased())
    }

    func defaultTenant() throws -> String {
        let tenant = try Settings.defaultTenant.value(defaultTenantFlag)
        guard TenantName.isValid(tenant) else {
            throw ValidationError(
                "--default-tenant must be 1 to \(TenantName.maxLength) characters of A-Z a-z 0-9 . _ : -")
        }
        return tenant
    }

    func validate() throws {
        let settings = [
            Settings.authJWTSecret, Settings.authTokensFile, Settings.authJWKSFile, Settings.authJWKSURL,
            Settings.authTenantClaim, Settings.authAudience, Settings.authIssuer, Settings.authIssuersFile,
        ]
        let flags = [
            jwtSecretFlag, tokensFileFlag, jwksFileFlag, jwksURLFlag, tenantClaimFlag, audienceFlag, issuerFlag,
            issuersFileFlag,
        ]
        for (setting, flag) in zip(settings, flags) {
            if flag?.isEmpty == true {
                throw ValidationError("--\(setting.flag) is empty: give a value or leave it out")
            }
            if let name = setting.environment, ProcessInfo.processInfo.environment[name]?.isEmpty == true {
                throw ValidationError(
                    """
                    \(name) is set but empty: unset it, or give it a value (authentication never turns off by \
                    accident)
                    """
                )
            }
        }
        if let secret = jwtSecret {
            guard !Self.isPlaceholder(secret) else {
                throw ValidationError(
                    "--auth-jwt-secret is the placeholder deploy/ ships: generate a secret of your own")
            }
            guard secret.utf8.count >= 32 else { throw ValidationError("--auth-jwt-secret must be at least 32 bytes") }
            guard Set(secret.utf8).count >= 16 else {
                throw ValidationError(
                    "--auth-jwt-secret has fewer than 16 distinct bytes: "
                        + "generate a random one (openssl rand -base64 48)")
            }
        }
        if jwksFile != nil, jwksURL != nil {
            throw ValidationError("give --auth-jwks-file or --auth-jwks-url, not both")
        }
        if let issuersFile {
            let single = [
                (jwtSecret, "--auth-jwt-secret"), (jwksFile, "--auth-jwks-file"), (jwksURL, "--auth-jwks-url"),
                (try Settings.authAudience.resolve(audienceFlag), "--auth-audience"),
                (try Settings.authIssuer.resolve(issuerFlag), "--auth-issuer"),
            ]
            if let (_, flag) = single.first(where: { $0.0 != nil }) {
                throw ValidationError(
                    "--auth-issuers-file names every issuer, its audience and keys: leave out \(flag)")
            }
            do { _ = try TrustedIssuers.load(fromFile: issuersFile) } catch let failure as AuthenticationFailure {
                throw ValidationError("--auth-issuers-file: \(failure.reason)")
            }
        }
        if let jwksURL {
            guard let url = URL(string: jwksURL), TrustedIssuers.isAcceptableKeySetURL(url) else {
                throw ValidationError("--auth-jwks-url must be an https:// URL (http:// only on loopback)")
            }
        }
        if verifiesJWTs {
            if try Settings.authAudience.resolve(audienceFlag) == nil, !allowAnyAudience {
                throw ValidationError(
                    "--auth-audience is required with JWT verification: name this service's "
                        + "audience, or pass --auth-allow-any-audience to accept tokens issued for any service")
            }
            if try Settings.authIssuer.resolve(issuerFlag) == nil, !allowAnyIssuer {
                throw ValidationError(
                    "--auth-issuer is required with JWT verification: name the identity provider, "
                        + "or pass --auth-allow-any-issuer to accept any issuer the keys verify")
            }
        }
        if let claim = try Settings.authTenantClaim.resolve(tenantClaimFlag), claim.isEmpty || claim.count > 100 {
            throw ValidationError("--auth-tenant-claim must be 1 to 100 characters")
        }
        // Each refuses a value outside its bounds (Settings), naming the flag.
        _ = try Settings.authLeeway.resolve(leewayFlag)
        _ = try Settings.authJWKSRefresh.resolve(jwksRefreshFlag)
        _ = try defaultTenant()
        if let tokensFile {
            do { _ = try StaticTokens.load(fromFile: tokensFile) } catch let failure as AuthenticationFailure {
                throw ValidationError("--auth-tokens-file: \(failure.reason)")
            }
        }
    }

    func rules() throws -> ClaimRules {
        var rules = ClaimRules()
        rules.tenantClaim = try Settings.authTenantClaim.value(tenantClaimFlag)
        rules.leeway = Double(try Settings.authLeeway.value(leewayFlag))
        rules.audience = try Settings.authAudience.resolve(audienceFlag)
        rules.issuer = try Settings.authIssuer.resolve(issuerFlag)
        return rules
    }

    /// The verifier, and the JWK Set source that keeps its keys current; nil when
    /// authentication is off. A JWK Set that cannot be read at start refuses to start.
    func verifier(logger: Logger) async throws -> (TokenVerifier, KeySetSource?, IssuerRoutes?)? {
        guard isOn else {
            logger.warning(
                """
                authentication is OFF: every request acts for the default tenant with every scope; set \
                --auth-jwt-secret, --auth-jwks-file, --auth-jwks-url or --auth-tokens-file in production
                """
            )
            return nil
        }
        if verifiesJWTs, allowAnyAudience, try Settings.authAudience.resolve(audienceFlag) == nil {
            logger.warning(
                """
                JWTs are accepted whatever their aud (--auth-allow-any-audience): a token your identity provider \
                issued for another service is accepted here; set --auth-audience
                """)
        }
        if verifiesJWTs, allowAnyIssuer, try Settings.authIssuer.resolve(issuerFlag) == nil {
            logger.warning("JWTs are accepted whatever their iss (--auth-allow-any-issuer): set --auth-issuer")
        }
        let tokens = try tokensFile.map { try StaticTokens.load(fromFile: $0) } ?? [:]
        if let issuersFile {
            let leeway = Double(try Settings.authLeeway.value(leewayFlag))
            let verifier = TokenVerifier(
                keys: VerificationKeys(), staticTokens: tokens, rules: try rules(), routesByIssuer: true)
            let routes = IssuerRoutes(file: issuersFile, leeway: leeway, logger: logger)
            do {
                try await routes.load(into: verifier)
            } catch {
                throw ValidationError("--auth-issuers-file: \(error)")
            }
            return (verifier, nil, routes)
        }
        var keys = VerificationKeys()
        if let jwtSecret { keys = await VerificationKeys.withSecret(jwtSecret) }
        var source: KeySetSource?
        if let jwksFile {
            source = KeySetSource(.file(jwksFile), logger: logger)
        } else if let jwksURL, let url = URL(string: jwksURL) {
            source = KeySetSource(
                .url(url), interval: .seconds(try Settings.authJWKSRefresh.value(jwksRefreshFlag)), logger: logger)
        }
        if let source {
            do {
                keys = VerificationKeys(set: try await source.load(), secret: keys)
            } catch {
                throw ValidationError("the JWK Set \(source.location) cannot be used: \(error)")
            }
        }
        let rules = try rules()
        let verifier = TokenVerifier(keys: keys, staticTokens: tokens, rules: rules, keySource: source)
        // What an operator checks first when tokens are refused; names, never a secret.
        logger.info(
            "authentication in force",
            metadata: [
                "issuers": "\(rules.issuer ?? "any")", "audiences": "\(rules.audience ?? "any")",
                "tenant_claims": "\(rules.tenantClaim)", "key_ids": "\(keys.keyIDs.joined(separator: ","))",
                "key_source": "\(source.map { "\($0.location)" } ?? "none")",
                "hs256_secret": "\(keys.hasSecret ? "set" : "none")",
                "static_tokens": "\(tokens.count)",
            ])
        return (verifier, source, nil)
    }
}
