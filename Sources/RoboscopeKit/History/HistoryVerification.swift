import Foundation
import RoboscopeProofs
import RoboscopeWire

/// What a verifier keeps between runs (DESIGN.md, "Verifying offline"): the key it pinned
/// (given, or seen first) and the newest checkpoint it verified. A later checkpoint must
/// extend that one: a log rolled back or rewritten since fails.
public struct KeptCheckpoint: Codable, Sendable, Hashable {
    public var verifierKey: String
    /// The signed note, as the service served it.
    public var note: String

    public init(verifierKey: String, note: String) {
        self.verifierKey = verifierKey
        self.note = note
    }

    enum CodingKeys: String, CodingKey {
        case verifierKey = "verifier_key"
        case note
    }
}

/// The outcome of `RoboscopeClient.verifyHistory`.
public struct HistoryReport: Sendable {
    /// The newest checkpoint, verified (nil: the tenant's log has none yet).
    public var checkpoint: Checkpoint?
    /// Entries whose digest, chain, signature and place in the tree were checked.
    public var entriesChecked: Int
    /// The first thing that does not hold; nil when everything does.
    public var failure: LogAudit.Failure?
    /// What to keep for the next run (the kept one again after a failure).
    public var kept: KeptCheckpoint?
}

extension RoboscopeClient {
    /// Verifies the caller's tenant's history without trusting the service's database:
    /// the newest checkpoint's signature against `pinnedKey` (else the kept key, else the
    /// key the service names, trusted on first use), its consistency with `kept`, and with
    /// `entries` every entry of the log up to it (digest, stream chain, append signature,
    /// the tree's root). Needs a token with the `audit` scope.
    public func verifyHistory(pinnedKey: String?, kept: KeptCheckpoint?, entries: Bool) async throws -> HistoryReport {
        if let pinnedKey, let kept, try NoteVerifier(pinnedKey) != NoteVerifier(kept.verifierKey) {
            return HistoryReport(
                checkpoint: nil, entriesChecked: 0,
                failure: .init(tenantSeq: nil, "the key given is not the one kept from earlier runs"), kept: kept)
        }
        let keyText: String
        if let given = pinnedKey ?? kept?.verifierKey {
            keyText = given
        } else {
            keyText = try await text("/checkpoints/key")
        }
        let verifier = try NoteVerifier(keyText)
        let note: String
        do {
            note = try await text("/checkpoints/latest")
        } catch RoboscopeError.notFound {
            // No checkpoint yet: nothing is proven, nothing fails, unless one was kept.
            let failure = kept.map { _ in LogAudit.Failure(tenantSeq: 1, "the service has no checkpoint any more") }
            return HistoryReport(checkpoint: nil, entriesChecked: 0, failure: failure, kept: kept)
        }
        let checkpoint: Checkpoint
        do {
            checkpoint = try Checkpoint(note: note, verifier: verifier)
        } catch {
            return HistoryReport(
                checkpoint: nil, entriesChecked: 0,
                failure: .init(tenantSeq: nil, "the newest checkpoint does not verify: \(error)"), kept: kept)
        }
        var report = HistoryReport(
            checkpoint: checkpoint, entriesChecked: 0, failure: nil,
            kept: KeptCheckpoint(verifierKey: verifier.description, note: note))
        if let kept, let failure = try await consistency(of: checkpoint, with: kept, verifier: verifier) {
            report.failure = failure
            report.kept = kept
            return report
        }
        if entries {
            let (checked, failure) = try await audit(checkpoint, verifier: verifier)
            report.entriesChecked = checked
            if let failure {
                report.failure = failure
                report.kept = kept
            }
        }
        return report
    }

    private func consistency(
        of checkpoint: Checkpoint, with kept: KeptCheckpoint, verifier: NoteVerifier
    )
        async throws -> LogAudit.Failure?
    {
        let old: Checkpoint
        do {
            old = try Checkpoint(note: kept.note, verifier: verifier)
        } catch {
            return .init(tenantSeq: nil, "the kept checkpoint does not verify with the key: \(error)")
        }
        guard old.origin == checkpoint.origin else {
            return .init(tenantSeq: nil, "the checkpoint is of \(checkpoint.origin), the kept one of \(old.origin)")
        }
        guard checkpoint.size >= old.size else {
            return .init(
                tenantSeq: Int64(checkpoint.size) + 1,
                "the log shrank from \(old.size) to \(checkpoint.size) events: it was rolled back or cut")
        }
        let proof: [Hash]
        if checkpoint.size == old.size {
            proof = []
        } else {
            let answer = try await json("/proofs/consistency?from=\(old.size)&to=\(checkpoint.size)")
            proof = try Self.hashes(answer["hashes"])
        }
        do {
            try MerkleProofs.verifyConsistency(
                oldSize: old.size, newSize: checkpoint.size, oldRoot: old.root, newRoot: checkpoint.root, proof: proof)
        } catch {
            return .init(
                tenantSeq: nil,
                "the checkpoint of \(checkpoint.size) events does not extend the kept one of \(old.size): "
                    + "the log was rewritten (\(error))")
        }
        return nil
    }

    private func audit(_ checkpoint: Checkpoint, verifier: NoteVerifier) async throws -> (Int, LogAudit.Failure?) {
        var after: Int64 = 0
        var audit: LogAudit?
        var checked = 0
        while true {
            let page = try await json("/proofs/entries?after=\(after)&limit=1000")
            guard case .string(let tenant) = page["tenant"] else {
                throw RoboscopeError.malformedResponse("the entries page names no tenant")
            }
            guard checkpoint.origin.hasSuffix("/" + tenant) else {
                return (checked, .init(tenantSeq: nil, "the checkpoint is of \(checkpoint.origin), not of \(tenant)"))
            }
            if audit == nil { audit = LogAudit(tenant: tenant, verifier: verifier, checkpoint: checkpoint) }
            let entries = try Self.entries(page["entries"])
            do {
                try audit!.check(entries)
            } catch {
                return (checked, error)
            }
            checked += entries.filter { $0.tenantSeq <= Int64(checkpoint.size) }.count
            guard let last = entries.last, entries.count == 1000, last.tenantSeq < Int64(checkpoint.size) else {
                break
            }
            after = last.tenantSeq
        }
        do {
            try audit?.finish()
        } catch {
            return (checked, error)
        }
        return (checked, nil)
    }

    private func text(_ path: String) async throws -> String {
        String(decoding: try await send(method: "GET", path: path, body: nil, key: nil).body, as: UTF8.self)
    }

    private func json(_ path: String) async throws -> JSONValue {
        let body = try await send(method: "GET", path: path, body: nil, key: nil).body
        do {
            return try WireCoding.decoder().decode(JSONValue.self, from: body)
        } catch {
            throw RoboscopeError.malformedResponse("\(path): \(error)")
        }
    }

    private static func hashes(_ value: JSONValue?) throws -> [Hash] {
        guard case .array(let items) = value else { throw RoboscopeError.malformedResponse("no hashes") }
        return try items.map { item in
            guard case .string(let text) = item, let bytes = Data(base64Encoded: text) else {
                throw RoboscopeError.malformedResponse("a hash is not base64")
            }
            return Array(bytes)
        }
    }

    private static func entries(_ value: JSONValue?) throws -> [LogAudit.Entry] {
        guard case .array(let items) = value else { throw RoboscopeError.malformedResponse("no entries") }
        return try items.map { item in
            guard case .integer(let number) = item["tenant_seq"], case .string(let digest) = item["digest"],
                let digestBytes = Hex.decode(digest), case .string(let content) = item["content"]
            else { throw RoboscopeError.malformedResponse("an entry lacks tenant_seq, digest or content") }
            var range: ClosedRange<Int64>?
            if case .array(let bounds) = item["signed_range"], bounds.count == 2,
                case .integer(let first) = bounds[0], case .integer(let last) = bounds[1], first <= last
            {
                range = first...last
            }
            return LogAudit.Entry(
                tenantSeq: number, digest: digestBytes,
                previousDigest: item["previous_digest"]?.stringValue.flatMap(Hex.decode), content: content,
                signedRange: range,
                signature: item["signature"]?.stringValue.flatMap { Data(base64Encoded: $0) }.map { Array($0) })
        }
    }
}
