import Crypto

/// Checks a tenant's log entry by entry against a verified checkpoint and the service's
/// key, trusting nothing the entries claim (DESIGN.md, "Verifying offline"): each
/// digest is recomputed from the text it covers and the previous digest of its stream,
/// each append's signature from its entries, and the tree's root from every digest.
public struct LogAudit {
    /// One entry as the service serves it (`GET /api/v1/proofs/entries`).
    public struct Entry: Sendable, Hashable {
        public var tenantSeq: Int64
        public var digest: [UInt8]
        public var previousDigest: [UInt8]?
        /// The text the digest covers after the previous digest: event id, stream type,
        /// stream id, version, type, data, metadata, time, separated by U+001F.
        public var content: String
        public var signedRange: ClosedRange<Int64>?
        public var signature: [UInt8]?

        public init(
            tenantSeq: Int64, digest: [UInt8], previousDigest: [UInt8]?, content: String,
            signedRange: ClosedRange<Int64>?, signature: [UInt8]?
        ) {
            self.tenantSeq = tenantSeq
            self.digest = digest
            self.previousDigest = previousDigest
            self.content = content
            self.signedRange = signedRange
            self.signature = signature
        }

        /// The content's fields.
        public var fields: [Substring] { content.split(separator: "\u{1F}", omittingEmptySubsequences: false) }
    }

    /// The first entry that does not hold, and why.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// Nil when no single entry can be named (a checkpoint that forks the kept one).
        public var tenantSeq: Int64?
        public var problem: String

        public init(tenantSeq: Int64?, _ problem: String) {
            self.tenantSeq = tenantSeq
            self.problem = problem
        }

        public var description: String {
            tenantSeq.map { "tenant_seq \($0): \(problem)" } ?? problem
        }
    }

    let tenant: String
    let verifier: NoteVerifier
    let checkpoint: Checkpoint

    private var next: Int64 = 1
    private var streams: [Substring: (version: Int64, digest: [UInt8])] = [:]
    private var leaves: [Hash] = []
    private var pendingRange: [Entry] = []

    public init(tenant: String, verifier: NoteVerifier, checkpoint: Checkpoint) {
        self.tenant = tenant
        self.verifier = verifier
        self.checkpoint = checkpoint
        leaves.reserveCapacity(Int(min(checkpoint.size, 1 << 24)))
    }

    /// Checks the next entries, in `tenant_seq` order from 1; entries past the
    /// checkpoint's size are not covered by it and are passed over.
    public mutating func check(_ entries: [Entry]) throws(Failure) {
        for entry in entries {
            if entry.tenantSeq <= Int64(checkpoint.size) {
                try check(entry)
            } else if let last = pendingRange.last, entry.tenantSeq == last.tenantSeq + 1 {
                // An append the checkpoint cuts: its signature covers entries past it too.
                try sign(entry)
            }
        }
    }

    /// Checks that the entries covered the whole checkpointed tree, and its root.
    public mutating func finish() throws(Failure) {
        try closeRange()
        guard next > Int64(checkpoint.size) else {
            throw Failure(
                tenantSeq: next, "missing: the log ends at \(next - 1), the checkpoint covers \(checkpoint.size)")
        }
        guard MerkleHash.root(leaves[...]) == checkpoint.root else {
            throw Failure(tenantSeq: nil, "the entries' tree is not the checkpoint's: its root differs")
        }
    }

    private mutating func check(_ entry: Entry) throws(Failure) {
        guard entry.tenantSeq == next else {
            throw Failure(tenantSeq: next, "missing: the log skips from \(next - 1) to \(entry.tenantSeq)")
        }
        let fields = entry.fields
        guard fields.count == 8, let version = Int64(fields[3]) else {
            throw Failure(tenantSeq: entry.tenantSeq, "its content is not the eight fields of an event")
        }
        let stream = fields[1] + ":" + fields[2]
        let previous = streams[stream]
        if version == 1 {
            guard entry.previousDigest == nil, previous == nil else {
                throw Failure(tenantSeq: entry.tenantSeq, "a stream's first event follows another")
            }
        } else {
            guard let previous, previous.version == version - 1, entry.previousDigest == previous.digest else {
                throw Failure(
                    tenantSeq: entry.tenantSeq,
                    "version \(version) of \(stream) does not follow the version before it in this log")
            }
        }
        var hasher = SHA256()
        hasher.update(data: entry.previousDigest ?? [])
        hasher.update(data: Array(entry.content.utf8))
        guard Array(hasher.finalize()) == entry.digest else {
            throw Failure(tenantSeq: entry.tenantSeq, "its content does not give its digest: it was changed")
        }
        streams[stream] = (version, entry.digest)
        leaves.append(MerkleHash.leaf(entry.digest))
        try sign(entry)
        next += 1
    }

    /// Gathers an append's entries and checks its signature once the range is complete.
    private mutating func sign(_ entry: Entry) throws(Failure) {
        guard let range = entry.signedRange, entry.signature != nil, range.contains(entry.tenantSeq) else {
            throw Failure(tenantSeq: entry.tenantSeq, "no signature of the service covers it")
        }
        if let first = pendingRange.first, first.signedRange != range || first.signature != entry.signature {
            throw Failure(tenantSeq: first.tenantSeq, "its append's signature covers events that are not there")
        }
        if pendingRange.isEmpty, range.lowerBound != entry.tenantSeq {
            throw Failure(tenantSeq: entry.tenantSeq, "its append's signature covers events that are not there")
        }
        pendingRange.append(entry)
        if entry.tenantSeq == range.upperBound { try closeRange() }
    }

    private mutating func closeRange() throws(Failure) {
        guard let first = pendingRange.first, let range = first.signedRange, let signature = first.signature else {
            return
        }
        defer { pendingRange = [] }
        guard pendingRange.count == range.count else {
            // A range cut by the checkpoint's end is checked when the next checkpoint covers it.
            if Int64(checkpoint.size) < range.upperBound { return }
            throw Failure(tenantSeq: first.tenantSeq, "its append's signature covers events that are not there")
        }
        let statement = AppendStatement(
            tenant: tenant, entries: pendingRange.map { .init(tenantSeq: $0.tenantSeq, digest: $0.digest) })
        guard verifier.isValid(signature: signature, of: statement.text) else {
            throw Failure(
                tenantSeq: first.tenantSeq,
                "its append's signature (events \(range.lowerBound) to \(range.upperBound)) does not verify")
        }
    }
}
