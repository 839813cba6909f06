import RoboscopeWire

/// What the service signs for each append transaction (DESIGN.md, "Verifiable history"):
/// `roboscope-append`, the tenant, then each of the tenant's events of the transaction in
/// `tenant_seq` order as its `tenant_seq`, a space and its digest in hex; every line ends
/// in a newline. A verifier rebuilds it from the entries of a `signed_range`.
public struct AppendStatement: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var tenantSeq: Int64
        public var digest: [UInt8]

        public init(tenantSeq: Int64, digest: [UInt8]) {
            self.tenantSeq = tenantSeq
            self.digest = digest
        }
    }

    public var tenant: String
    public var entries: [Entry]

    public init(tenant: String, entries: [Entry]) {
        self.tenant = tenant
        self.entries = entries.sorted { $0.tenantSeq < $1.tenantSeq }
    }

    public var text: String {
        var text = "roboscope-append\n\(tenant)\n"
        for entry in entries {
            text += "\(entry.tenantSeq) \(Hex.encode(entry.digest))\n"
        }
        return text
    }
}
