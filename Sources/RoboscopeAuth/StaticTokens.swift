import Foundation
import RoboscopeDomain

/// The tokens file (`--auth-tokens-file`): API tokens for robots and scripts, each with
/// the fields a JWT's claims carry.
/// `[{"token": "…" | "token_sha256": "…", "subject": "…", "tenant": "…", "scope": "read write",`
/// `"spaces": ["…"]}]`
public enum StaticTokens {
    /// SHA-256 (hex) of each token → its principal. An entry without `tenant` or `scope`
    /// is refused: a token file must never grant by default.
    public static func parse(_ data: Data, source: String) throws -> [String: Principal] {
        guard case .array(let entries)? = try? JSONParser.parse(data) else {
            throw AuthenticationFailure("\(source): expected a JSON array of tokens")
        }
        var tokens: [String: Principal] = [:]
        for (index, entry) in entries.enumerated() {
            let fields = entry.objectValue ?? [:]
            for required in ["subject", "tenant", "scope"] where fields[required] == nil {
                throw AuthenticationFailure("\(source): token \(index) has no \(required)")
            }
            let principal: Principal
            do {
                principal = try ClaimRules.principal(
                    subject: fields["subject"], tenant: fields["tenant"], tenantClaim: "tenant", scope: fields["scope"],
                    spaces: fields["spaces"])
            } catch let failure as AuthenticationFailure {
                let reason = failure.reason.replacingOccurrences(of: "token sub", with: "subject")
                throw AuthenticationFailure("\(source): token \(index): \(reason)")
            }
            if let token = fields["token"]?.stringValue, !token.isEmpty {
                tokens[Digest.sha256Hex(token)] = principal
            } else if let digest = fields["token_sha256"]?.stringValue, digest.count == 64 {
                tokens[digest.lowercased()] = principal
            } else {
                throw AuthenticationFailure("\(source): token \(index) needs token or token_sha256 (64 hex digits)")
            }
        }
        return tokens
    }

    public static func load(fromFile path: String) throws -> [String: Principal] {
        try parse(try SettingsFile.read(path), source: path)
    }
}
