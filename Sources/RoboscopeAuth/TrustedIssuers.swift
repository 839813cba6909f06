import Foundation
import RoboscopeDomain

/// One identity provider of `--auth-issuers-file` (docs/operations.md, "Running many
/// customers"): whose tokens it signs (`iss`), for which audience, where its keys are,
/// and what it may say: one pinned tenant, or the tenant a claim names; and whether it is
/// trusted with the `operator` scope (the deployment's own provider, never a customer's).
public struct TrustedIssuer: Sendable, Hashable {
    public var issuer: String
    public var audience: String
    /// Its JWK Set, kept current like `--auth-jwks-file`'s or `--auth-jwks-url`'s.
    public var keys: KeySetSource.Location
    /// Every token of this issuer is this tenant's.
    public var tenant: String?
    /// The claim naming the tenant (`tenant` unless the entry says otherwise).
    public var tenantClaim: String
    public var isOperator: Bool

    /// The claim rules of its tokens (the leeway is the deployment's).
    public func rules(leeway: Double) -> ClaimRules {
        var rules = ClaimRules()
        rules.issuer = issuer
        rules.audience = audience
        rules.tenantClaim = tenantClaim
        rules.pinnedTenant = tenant
        rules.grantsOperator = isOperator
        rules.leeway = leeway
        return rules
    }
}

/// `--auth-issuers-file`: `{"issuers": [{"issuer", "jwks_url" | "jwks_file", "audience",
/// "tenant" | "tenant_claim", "operator"}]}`. Parsing refuses anything doubtful, naming
/// the entry: an operator entry that pins a tenant, two entries of one issuer, a key URL
/// that is not https (loopback aside).
public enum TrustedIssuers {
    public static func parse(_ data: Data, source: String) throws -> [TrustedIssuer] {
        guard case .object(let document)? = try? JSONParser.parse(data), case .array(let entries)? = document["issuers"]
        else {
            throw AuthenticationFailure("\(source): expected {\"issuers\": [...]}")
        }
        guard !entries.isEmpty else { throw AuthenticationFailure("\(source): no issuers") }
        var parsed: [TrustedIssuer] = []
        for (index, entry) in entries.enumerated() {
            let name = "\(source): issuers[\(index)]"
            guard case .object(let fields) = entry else { throw AuthenticationFailure("\(name) is not an object") }
            func text(_ key: String) throws -> String? {
                guard let value = fields[key], value != .null else { return nil }
                guard let string = value.stringValue, !string.isEmpty, string.count <= 1000 else {
                    throw AuthenticationFailure("\(name).\(key) must be a non-empty string")
                }
                return string
            }
            guard let issuer = try text("issuer") else { throw AuthenticationFailure("\(name).issuer is required") }
            guard let audience = try text("audience") else {
                throw AuthenticationFailure("\(name).audience is required")
            }
            let keys: KeySetSource.Location
            switch (try text("jwks_file"), try text("jwks_url")) {
            case (let file?, nil): keys = .file(file)
            case (nil, let address?):
                guard let url = URL(string: address), isAcceptableKeySetURL(url) else {
                    throw AuthenticationFailure("\(name).jwks_url must be an https:// URL (http:// only on loopback)")
                }
                keys = .url(url)
            default: throw AuthenticationFailure("\(name): give jwks_file or jwks_url, one of them")
            }
            let tenant = try text("tenant")
            if let tenant, !TenantName.isValid(tenant) {
                throw AuthenticationFailure(
                    "\(name).tenant must be 1 to \(TenantName.maxLength) characters of A-Z a-z 0-9 . _ : -")
            }
            let tenantClaim = try text("tenant_claim") ?? "tenant"
            let isOperator: Bool
            switch fields["operator"] {
            case nil, .null?: isOperator = false
            case .bool(let flag)?: isOperator = flag
            default: throw AuthenticationFailure("\(name).operator must be true or false")
            }
            if isOperator, tenant != nil {
                throw AuthenticationFailure(
                    "\(name): an operator issuer pins no tenant (its operators act for no customer)")
            }
            guard !parsed.contains(where: { $0.issuer == issuer }) else {
                throw AuthenticationFailure("\(name): issuer \(issuer) is listed twice")
            }
            parsed.append(
                TrustedIssuer(
                    issuer: issuer, audience: audience, keys: keys, tenant: tenant,
                    tenantClaim: tenantClaim, isOperator: isOperator))
        }
        return parsed
    }

    public static func load(fromFile path: String) throws -> [TrustedIssuer] {
        try parse(try SettingsFile.read(path), source: path)
    }

    /// A JWK Set fetched over plain HTTP can be swapped by anyone on the path; loopback
    /// (a sidecar, the tests) is the one exception.
    public static func isAcceptableKeySetURL(_ url: URL) -> Bool {
        if url.scheme == "https" { return url.host != nil }
        guard url.scheme == "http", let host = url.host?.lowercased() else { return false }
        return host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}
