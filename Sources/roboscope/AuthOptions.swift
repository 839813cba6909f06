import ArgumentParser
import RoboscopeAuth

/// Authentication flags of `serve`: off unless a JWT secret or a tokens file is given.
struct AuthOptions: ParsableArguments {
    @Option(name: Settings.authJWTSecret.name, help: Settings.authJWTSecret.help) var jwtSecretFlag: String?
    @Option(name: Settings.authTokensFile.name, help: Settings.authTokensFile.help) var tokensFileFlag: String?

    var jwtSecret: String? { try? Settings.authJWTSecret.resolve(jwtSecretFlag) }
    var tokensFile: String? { try? Settings.authTokensFile.resolve(tokensFileFlag) }

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
