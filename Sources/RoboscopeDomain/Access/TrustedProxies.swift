/// Which peers may name the client's address in `X-Forwarded-For` (`--trusted-proxies`).
///
/// Behind an ingress every request comes from the ingress's address; the audit trail,
/// the rate limits and the connection caps need the client's. `X-Forwarded-For` is only
/// believed from a listed proxy, since anyone else could write anything in it; the
/// client is then the rightmost address of the header that is not itself a trusted
/// proxy (each proxy appends the address it was reached from).
public struct TrustedProxies: Sendable, Equatable {
    public let networks: [Network]

    public init(_ networks: [Network] = []) {
        self.networks = networks
    }

    /// Reads a comma-separated list of CIDRs or single addresses (`10.0.0.0/8,::1`).
    public static func parse(_ list: String) -> Result<TrustedProxies, InvalidEntry> {
        var networks: [Network] = []
        for entry in list.split(separator: ",") {
            let text = String(entry.filter { $0 != " " })
            guard !text.isEmpty else { continue }
            guard let network = Network(text) else { return .failure(InvalidEntry(entry: text)) }
            networks.append(network)
        }
        return .success(TrustedProxies(networks))
    }

    public struct InvalidEntry: Error, Equatable, Sendable {
        public let entry: String
    }

    public func trusts(_ address: String) -> Bool {
        guard let bytes = IPAddress.bytes(address) else { return false }
        return networks.contains { $0.contains(bytes) }
    }

    /// The client's address: the peer's, unless the peer is a trusted proxy and
    /// `X-Forwarded-For` names someone beyond it.
    public func clientAddress(peer: String?, forwardedFor: String?) -> String? {
        guard let peer, trusts(peer), let forwardedFor else { return peer }
        var client = peer
        for hop in forwardedFor.split(separator: ",").reversed() {
            let address = String(hop.filter { $0 != " " })
            // A hop that is not an address ends the chain: what is left of it is unverifiable.
            guard IPAddress.bytes(address) != nil else { break }
            client = address
            if !trusts(address) { break }
        }
        return client
    }

    /// An address and a prefix length: `10.0.0.0/8`, `fd00::/8`, or one address.
    public struct Network: Sendable, Equatable {
        public let address: [UInt8]
        public let prefixLength: Int

        public init?(_ text: String) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2, let address = IPAddress.bytes(String(parts[0])) else { return nil }
            let bits = address.count * 8
            if parts.count == 2 {
                guard let length = Int(parts[1]), (0...bits).contains(length), parts[1].allSatisfy(\.isNumber) else {
                    return nil
                }
                prefixLength = length
            } else {
                prefixLength = bits
            }
            self.address = address
        }

        func contains(_ candidate: [UInt8]) -> Bool {
            guard candidate.count == address.count else { return false }
            var left = prefixLength
            for (a, b) in zip(address, candidate) where left > 0 {
                let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
                if a & mask != b & mask { return false }
                left -= 8
            }
            return true
        }
    }
}

/// IPv4 and IPv6 addresses as bytes (no C library: the domain stays pure). An
/// IPv4-mapped IPv6 address (`::ffff:10.0.0.1`, how a dual-stack socket reports an IPv4
/// peer) reads as its IPv4 address.
public enum IPAddress {
    public static func bytes(_ text: String) -> [UInt8]? {
        if let v4 = ipv4(Substring(text)) { return v4 }
        guard let v6 = ipv6(text) else { return nil }
        if v6[0..<10].allSatisfy({ $0 == 0 }), v6[10] == 0xFF, v6[11] == 0xFF { return Array(v6[12...]) }
        return v6
    }

    static func ipv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ $0.isASCII && $0.isNumber }),
                let value = UInt8(part), part.count == 1 || part.first != "0"
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    static func ipv6(_ text: String) -> [UInt8]? {
        var text = Substring(text)
        if text.hasPrefix("["), text.hasSuffix("]") { text = text.dropFirst().dropLast() }
        if let zone = text.firstIndex(of: "%") { text = text[..<zone] }
        let halves = text.split(separator: "::", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count <= 2 else { return nil }
        func groups(_ half: Substring) -> [UInt8]? {
            if half.isEmpty { return [] }
            var bytes: [UInt8] = []
            let parts = half.split(separator: ":", omittingEmptySubsequences: false)
            for (index, part) in parts.enumerated() {
                if index == parts.count - 1, part.contains("."), let v4 = ipv4(part) {
                    bytes += v4
                } else {
                    guard (1...4).contains(part.count), let value = UInt16(part, radix: 16) else { return nil }
                    bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
                }
            }
            return bytes
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 { return head.count == 16 ? head : nil }
        guard let tail = groups(halves[1]), head.count + tail.count <= 14 else { return nil }
        return head + Array(repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}
