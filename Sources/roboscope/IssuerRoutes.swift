import Foundation
import Logging
import RoboscopeAuth
import ServiceLifecycle
import Synchronization

/// The verifiers of `--auth-issuers-file`'s entries, one per trusted issuer: built at start
/// (an entry whose keys cannot be read refuses the start), then kept current while the
/// process serves: the file is looked at every second and read again when it changed (an
/// entry added, changed or removed takes effect; a file that no longer parses keeps the
/// last good entries, logged), and each entry's keys are refreshed on their own schedule.
final class IssuerRoutes: Service, Sendable {
    let file: String
    let leeway: Double
    let logger: Logger
    private struct State {
        var stamp: Date?
        var built: [TrustedIssuer: TokenVerifier] = [:]
        var verifier: TokenVerifier?
    }

    private let state = Mutex(State())

    init(file: String, leeway: Double, logger: Logger) {
        self.file = file
        self.leeway = leeway
        self.logger = logger
    }

    /// Reads the file and every entry's keys into `verifier`; throws on the first failure.
    func load(into verifier: TokenVerifier) async throws {
        let stamp = KeySetSource.modified(file)
        let entries = try TrustedIssuers.load(fromFile: file)
        var built: [TrustedIssuer: TokenVerifier] = [:]
        for entry in entries {
            built[entry] = try await route(for: entry)
        }
        state.withLock { $0 = State(stamp: stamp, built: built, verifier: verifier) }
        verifier.setRoutes(Self.byIssuer(built))
        logInForce(entries, built)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                await refresh()
            }
        }
    }

    private func refresh() async {
        let (stamp, built, verifier) = state.withLock { ($0.stamp, $0.built, $0.verifier) }
        guard let verifier else { return }
        let now = KeySetSource.modified(file)
        if now != stamp {
            state.withLock { $0.stamp = now }
            do {
                let entries = try TrustedIssuers.load(fromFile: file)
                var next: [TrustedIssuer: TokenVerifier] = [:]
                for entry in entries {
                    if let kept = built[entry] {
                        next[entry] = kept
                    } else if let fresh = try? await route(for: entry) {
                        next[entry] = fresh
                    } else if let old = built.first(where: { $0.key.issuer == entry.issuer })?.value {
                        logger.error(
                            "issuer's keys cannot be read; keeping its last entry",
                            metadata: ["issuer": "\(entry.issuer)"])
                        next[entry] = old
                    } else {
                        logger.error(
                            "issuer's keys cannot be read; its tokens are refused",
                            metadata: ["issuer": "\(entry.issuer)"])
                    }
                }
                state.withLock { $0.built = next }
                verifier.setRoutes(Self.byIssuer(next))
                logInForce(entries, next)
            } catch {
                logger.error(
                    "issuers file reload failed; keeping the last good issuers",
                    metadata: ["file": "\(file)", "error": "\(error)"])
            }
        }
        for (_, route) in state.withLock({ $0.built }) {
            await route.keySource?.refreshIfDue(into: route)
        }
    }

    private func route(for entry: TrustedIssuer) async throws -> TokenVerifier {
        let source = KeySetSource(entry.keys, logger: logger)
        let set = try await source.load()
        return TokenVerifier(
            keys: VerificationKeys(set: set, secret: nil), rules: entry.rules(leeway: leeway), keySource: source)
    }

    private static func byIssuer(_ built: [TrustedIssuer: TokenVerifier]) -> [String: TokenVerifier] {
        Dictionary(uniqueKeysWithValues: built.map { ($0.key.issuer, $0.value) })
    }

    /// What an operator checks first when tokens are refused; names, never a secret.
    private func logInForce(_ entries: [TrustedIssuer], _ built: [TrustedIssuer: TokenVerifier]) {
        logger.info(
            "authentication in force",
            metadata: [
                "issuers": "\(entries.map(\.issuer).joined(separator: ","))",
                "audiences": "\(entries.map(\.audience).joined(separator: ","))",
                "tenant_claims":
                    "\(entries.map { $0.tenant.map { "pinned:\($0)" } ?? $0.tenantClaim }.joined(separator: ","))",
                "operator_issuers": "\(entries.filter(\.isOperator).map(\.issuer).joined(separator: ","))",
                "key_ids":
                    "\(entries.map { built[$0]?.keyIDs.joined(separator: "+") ?? "none" }.joined(separator: ","))",
                "key_source": "\(file)",
            ])
    }
}
