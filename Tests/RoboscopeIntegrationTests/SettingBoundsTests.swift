import Foundation
import Testing

/// A setting's bounds are declared with it (`Settings`): a value outside them, from the
/// flag or the environment, stops `roboscope serve` before it starts, with a message
/// naming the flag, the bounds and the value given.
@Suite struct SettingBoundsTests {
    struct Refusal: Sendable, CustomStringConvertible {
        var arguments: [String]
        var environment: [String: String] = [:]
        var message: String
        var description: String { message }
    }

    static let refusals: [Refusal] = [
        Refusal(arguments: ["--appends-at-once", "0"], message: "--appends-at-once must be at least 1, got 0"),
        Refusal(arguments: ["--http-port", "70000"], message: "--http-port must be 1 to 65535, got 70000"),
        Refusal(arguments: ["--db-statement-timeout", "0"], message: "--db-statement-timeout must be at least 0.001"),
        Refusal(
            arguments: ["--ws-ping-interval", "0.01"], message: "--ws-ping-interval must be 0.1 to 3600, got 0.01"),
        Refusal(arguments: ["--ws-deflate-window-bits", "16"], message: "--ws-deflate-window-bits must be 9 to 15"),
        Refusal(arguments: ["--auth-jwks-refresh", "0"], message: "--auth-jwks-refresh must be at least 1, got 0"),
        Refusal(arguments: ["--auth-leeway", "3601"], message: "--auth-leeway must be 0 to 3600, got 3601"),
        Refusal(
            arguments: ["--deployment-name", "prod:*"],
            message: "--deployment-name must be 1 to 63 letters, digits, `.`, `_` or `-`, got prod:*"),
        Refusal(
            arguments: [], environment: ["ROBOSCOPE_DEPLOYMENT_NAME": "eu west"],
            message: "--deployment-name must be 1 to 63 letters, digits, `.`, `_` or `-`, got eu west"),
        Refusal(
            arguments: [], environment: ["ROBOSCOPE_DB_POOL_SIZE": "0"],
            message: "--db-pool-size must be at least 1, got 0"),
    ]

    @Test(arguments: refusals)
    func aValueOutsideItsBoundsStopsTheStart(_ refusal: Refusal) async throws {
        let outcome = try await CommandRunner.roboscope(
            ["serve", "--no-migrate"] + refusal.arguments, environment: refusal.environment)
        #expect(outcome.status != 0)
        #expect(outcome.output.contains(refusal.message), "\(outcome.output)")
    }

    @Test func theReferenceShowsTheBounds() async throws {
        let printed = try await CommandRunner.roboscope(["settings"])
        #expect(printed.output.contains("| `--ws-port` | `ROBOSCOPE_WS_PORT` | `8081` (1 to 65535) |"))
        #expect(printed.output.contains("| `--db-pool-size` | `ROBOSCOPE_DB_POOL_SIZE` | `16` (at least 1) |"))
    }
}
