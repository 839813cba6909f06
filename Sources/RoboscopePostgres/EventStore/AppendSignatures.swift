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

    /// The statement that stores one signature (prepared, as the append is).
    static let insertStatement =
        "INSERT INTO eventlog.append_signatures (tenant, first_seq, last_seq, signature) "
        + "VALUES ($1, $2::bigint, $3::bigint, decode($4, 'base64'))"

    /// The statements that store `signatures`, one each (a combined append of several
    /// tenants has several), to run in the append's transaction.
    static func inserts(_ signatures: [Signature]) -> [PGConnection.PipelinedStatement] {
        signatures.map {
            .init(insertStatement, [$0.tenant, $0.firstSeq, $0.lastSeq, Data($0.signature).base64EncodedString()])
        }
    }
}
