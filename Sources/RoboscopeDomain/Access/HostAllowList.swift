/// The hosts a request's `Host` may name (`--allowed-hosts`). With authentication off a
/// request needs no token, so a page on any site could read and write through a browser
/// whose DNS an attacker rebinds to this server: its requests then name the attacker's
/// host, and only requests naming a host listed here are answered (docs/security.md,
/// "Browsers and proxies").
public struct HostAllowList: Sendable, Equatable, ExpressibleByArrayLiteral {
    /// Hosts, lowercase, IPv6 literals in brackets; the first stands in for any other
    /// where one host must be named (the realtime URL).
    public let hosts: [String]

    public static let localHosts = ["localhost", "127.0.0.1", "[::1]"]

    public init(_ hosts: [String] = Self.localHosts) {
        self.hosts = hosts.isEmpty ? Self.localHosts : hosts.map { $0.lowercased() }
    }

    public init(arrayLiteral hosts: String...) {
        self.init(hosts)
    }

    /// Whether a request with this `Host` (or `:authority`) is answered. A request
    /// without one (HTTP/1.0, never a browser's) is.
    public func permits(authority: String?) -> Bool {
        guard let authority, !authority.isEmpty else { return true }
        guard let host = Self.hostname(of: authority) else { return false }
        return hosts.contains(host)
    }

    /// The host of a `Host` header without its port, lowercased (IPv6 literals keep their brackets).
    public static func hostname(of authority: String?) -> String? {
        guard var host = authority?.lowercased(), !host.isEmpty else { return nil }
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            host = String(host[...close])
        } else if let colon = host.lastIndex(of: ":") {
            host = String(host[..<colon])
        }
        return host.isEmpty ? nil : host
    }
}
