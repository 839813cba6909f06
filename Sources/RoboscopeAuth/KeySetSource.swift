import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import Metrics
import Synchronization

/// Where a JWK Set comes from, and keeping it current: a file, re-read when it changes
/// (`--auth-jwks-file`), or a URL, fetched every `interval` and early when a token names
/// an unknown `kid` (`--auth-jwks-url`; at most once per 30 s). A reload that fails keeps
/// the last good keys; it is logged and counted (`roboscope_auth_key_reload_failures_total`).
public final class KeySetSource: Sendable {
    public enum Location: Sendable, Hashable, CustomStringConvertible {
        case file(String)
        case url(URL)

        public var description: String {
            switch self {
            case .file(let path): path
            case .url(let url): url.absoluteString
            }
        }
    }

    public let location: Location
    private let gate: Mutex<RefreshGate<ContinuousClock.Instant>>
    /// The file's modification time when last read.
    private let fileStamp = Mutex<Date?>(nil)
    private let logger: Logger
    private let failures = Counter(label: "roboscope_auth_key_reload_failures_total")
    private let reloads = Counter(label: "roboscope_auth_key_reloads_total")

    public init(_ location: Location, interval: Duration = .seconds(300), logger: Logger) {
        self.location = location
        gate = Mutex(RefreshGate(interval: interval))
        self.logger = logger
    }

    /// The set as it is now; throws when it cannot be read or holds no usable key.
    public func load() async throws -> KeySet {
        gate.withLock { $0.fetched(now: .now) }
        let data: Data
        switch location {
        case .file(let path):
            let stamp = Self.modified(path)
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw AuthenticationFailure("\(path): cannot be read (\(error.localizedDescription))")
            }
            fileStamp.withLock { $0 = stamp }
        case .url(let url):
            var request = URLRequest(url: url, timeoutInterval: 10)
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            let (body, response) = try await URLSession.shared.data(for: request)
            guard let status = (response as? HTTPURLResponse)?.statusCode, status == 200 else {
                throw AuthenticationFailure(
                    "\(url): answered \((response as? HTTPURLResponse)?.statusCode ?? 0), not 200")
            }
            data = body
        }
        let set = try await VerificationKeys.parseJWKS(data)
        if !set.skipped.isEmpty {
            logger.warning(
                "JWK Set keys skipped",
                metadata: ["source": "\(location)", "skipped": "\(set.skipped.joined(separator: "; "))"])
        }
        return set
    }

    /// Loads the set into `verifier`; a failure keeps what it has.
    public func reload(into verifier: TokenVerifier) async {
        do {
            let set = try await load()
            verifier.replaceKeySet(set)
            reloads.increment()
            logger.info(
                "JWK Set loaded", metadata: ["source": "\(location)", "keys": "\(set.keyIDs.joined(separator: ","))"])
        } catch {
            failures.increment()
            logger.error(
                "JWK Set reload failed; keeping the last good keys",
                metadata: ["source": "\(location)", "error": "\(error)"])
        }
    }

    /// The early refresh a token with an unknown `kid` asks for (URL sets only: a file is
    /// re-read when it changes), if the gate allows one now.
    public func refreshEarly(into verifier: TokenVerifier) async {
        guard case .url = location, gate.withLock({ $0.mayRefreshEarly(now: .now) }) else { return }
        await reload(into: verifier)
    }

    /// Keeps `verifier`'s set current until cancelled: a file is checked every second for
    /// a new modification time, a URL fetched when the schedule says.
    public func keepCurrent(_ verifier: TokenVerifier) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(1))
            await refreshIfDue(into: verifier)
        }
    }

    /// One look: a file whose modification time changed is read again, a URL fetched when
    /// its schedule says.
    public func refreshIfDue(into verifier: TokenVerifier) async {
        switch location {
        case .file(let path):
            let stamp = Self.modified(path)
            if stamp != fileStamp.withLock({ $0 }) { await reload(into: verifier) }
        case .url:
            if gate.withLock({ $0.isDue(now: .now) }) { await reload(into: verifier) }
        }
    }

    public static func modified(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }
}
