import RoboscopeAuth
import ServiceLifecycle

/// Keeps the JWK Set current while the process serves (a file re-read when it changes,
/// a URL fetched on schedule), until graceful shutdown.
struct KeySetRefresh: Service {
    let source: KeySetSource
    let verifier: TokenVerifier

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await source.keepCurrent(verifier)
        }
    }
}
