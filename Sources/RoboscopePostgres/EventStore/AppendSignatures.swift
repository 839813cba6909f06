import Foundation
import RoboscopeProofs

/// The service's signatures over what it appends (verifiable history): one per append
/// transaction and tenant, over `AppendStatement`, stored in the same transaction as the
/// events. The key stays in the process, so no database role can sign an event.
enum AppendSignatures {
    /// An appended event's place in its tenant's log.
    struct LogEntry: Sendable, Hashable {
        var tenant: String
        var tenantSeq: Int64
        var digest: [UInt8]
    }

    struct Signature: Sendable, Hashable {
        var tenant: String
        var firstSeq: Int64
        var lastSeq: Int64
        var signature: [UInt8]
    }

    /// One signature per tenant of `entries` (an append numbers a tenant's events
    /// contiguously, so each covers a range).
    static func sign(_ entries: [LogEntry], with signer: HistorySigner) throws -> [Signature] {
        try Dictionary(grouping: entries, by: \.tenant).sorted { $0.key < $1.key }.map { tenant, entries in
            let statement = AppendStatement(
                tenant: tenant, entries: entries.map { .init(tenantSeq: $0.tenantSeq, digest: $0.digest) })
            return Signature(
                tenant: tenant, firstSeq: statement.entries[0].tenantSeq,
                lastSeq: statement.entries[statement.entries.count - 1].tenantSeq,
                signature: try signer.signature(of: statement.text))
        }
    }

    /// The statement that stores `signatures`, with its values written in, so that it can
    /// lead a script that ends in `COMMIT` (a script takes no parameters); empty for none. A tenant's name holds
    /// only `[A-Za-z0-9._:-]`, a signature base64; quotes are doubled all the same.
    static func insertStatement(_ signatures: [Signature]) -> String {
        guard !signatures.isEmpty else { return "" }
        let rows = signatures.map { signature in
            let tenant = signature.tenant.replacingOccurrences(of: "'", with: "''")
            return "('\(tenant)', \(signature.firstSeq), \(signature.lastSeq), "
                + "decode('\(Data(signature.signature).base64EncodedString())', 'base64'))"
        }
        return "INSERT INTO eventlog.append_signatures (tenant, first_seq, last_seq, signature) VALUES "
            + rows.joined(separator: ", ") + "; "
    }
}
