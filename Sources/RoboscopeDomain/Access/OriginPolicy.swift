import RoboscopeWire

/// Which web pages may write to the service and open its WebSocket (`--allowed-origins`).
///
/// A browser sends `Origin` on every cross-site write and on every WebSocket upgrade, and
/// a page of any site may send them to a deployment its user can reach (an intranet one
/// without authentication included): CSRF and cross-site WebSocket hijacking. Native
/// clients (the kit, scripts) send no `Origin` and are not concerned. An origin is
/// allowed when it is listed, when the list is `*`, or when it is the request's own
/// (its host and port are the `Host` the browser sent the request to).
public struct OriginPolicy: Sendable, Equatable {
    /// Normalised origins: `scheme://host[:port]`, lowercase, without a default port.
    public let allowed: Set<String>
    /// `*`: every origin (a deployment whose browsers are all trusted).
    public let allowsAny: Bool

    public init(allowed: Set<String> = [], allowsAny: Bool = false) {
        self.allowed = allowed
        self.allowsAny = allowsAny
    }

    /// Reads a comma-separated list (`https://app.example.com,http://localhost:3000`, or
    /// `*`); nil names the first entry that is not an origin.
    public static func parse(_ list: String) -> Result<OriginPolicy, InvalidEntry> {
        var allowed: Set<String> = []
        var any = false
        for entry in list.split(separator: ",").map({ String(HeaderText.trimmed($0)) }) where !entry.isEmpty {
            if entry == "*" {
                any = true
            } else if let origin = normalised(entry) {
                allowed.insert(origin)
            } else {
                return .failure(InvalidEntry(entry: entry))
            }
        }
        return .success(OriginPolicy(allowed: allowed, allowsAny: any))
    }

    public struct InvalidEntry: Error, Equatable, Sendable {
        public let entry: String
    }

    /// Whether a request carrying `origin` (nil: none) and addressed to `host` may proceed.
    public func permits(origin: String?, host: String?) -> Bool {
        guard let origin else { return true }
        if allowsAny { return true }
        // "null" (sandboxed frames, file: pages) and anything unreadable are refused.
        guard let normalised = Self.normalised(origin) else { return false }
        if allowed.contains(normalised) { return true }
        guard let host, let authority = Self.authority(of: normalised) else { return false }
        return authority == Self.withoutDefaultPort(host.lowercased(), scheme: Self.scheme(of: normalised))
    }

    /// `scheme://host[:port]` lowercased with the scheme's default port left out; nil
    /// unless the scheme is http or https and nothing follows the authority but a `/`.
    public static func normalised(_ text: String) -> String? {
        var text = text.lowercased()
        if text.hasSuffix("/") { text.removeLast() }
        let scheme: String
        if text.hasPrefix("https://") {
            scheme = "https"
        } else if text.hasPrefix("http://") {
            scheme = "http"
        } else {
            return nil
        }
        let authority = String(text.dropFirst(scheme.count + 3))
        guard !authority.isEmpty,
            authority.unicodeScalars.allSatisfy({
                $0.value > 0x20 && $0.value < 0x7F && !"/?#@\\".unicodeScalars.contains($0)
            })
        else { return nil }
        return "\(scheme)://\(withoutDefaultPort(authority, scheme: scheme))"
    }

    private static func scheme(of origin: String) -> String {
        origin.hasPrefix("https://") ? "https" : "http"
    }

    private static func authority(of origin: String) -> String? {
        origin.hasPrefix("https://")
            ? String(origin.dropFirst(8)) : origin.hasPrefix("http://") ? String(origin.dropFirst(7)) : nil
    }

    private static func withoutDefaultPort(_ authority: String, scheme: String) -> String {
        let port = scheme == "https" ? ":443" : ":80"
        return authority.hasSuffix(port) ? String(authority.dropLast(port.count)) : authority
    }
}
