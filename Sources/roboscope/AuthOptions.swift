import ArgumentParser
import RoboscopeAuth

/// Authentication flags of `serve`: off unless a JWT secret or a tokens file is given.
struct AuthOptions: ParsableArguments {
    @Option(name: .customLong("auth-jwt-secret"), help: "Accept HS256 JWTs signed with this secret (env ROBOSCOPE_AUTH_JWT_SECRET).")
    var jwtSecretFlag: String?

    @Option(name: .customLong("auth-tokens-file"), help: "Accept the static API tokens in this JSON file (env ROBOSCOPE_AUTH_TOKENS_FILE).")
    var tokensFileFlag: String?

    var jwtSecret: String? { jwtSecretFlag ?? Environment.string("ROBOSCOPE_AUTH_JWT_SECRET") }
    var tokensFile: String? { tokensFileFlag ?? Environment.string("ROBOSCOPE_AUTH_TOKENS_FILE") }

    func validate() throws {
        if let secret = jwtSecret, secret.utf8.count < 32 {
            throw ValidationError("--auth-jwt-secret must be at least 32 bytes")
        }
        _ = try verifier()
    }

    /// nil when authentication is off.
    func verifier() throws -> TokenVerifier? {
        guard jwtSecret != nil || tokensFile != nil else { return nil }
        var tokens: [String: Credentials] = [:]
        if let tokensFile {
            do {
                tokens = try TokenVerifier.staticTokens(fromFile: tokensFile)
            } catch let failure as AuthenticationFailure {
                throw ValidationError(failure.reason)
            } catch {
                throw ValidationError("--auth-tokens-file \(tokensFile): \(error)")
            }
        }
        return TokenVerifier(jwtSecret: jwtSecret, staticTokens: tokens)
    }
}
