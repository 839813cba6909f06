import RoboscopeWire

/// A log's newest signed checkpoint as something outside the database saw it: what the
/// checkpointer records after each commit and compares before each signature, and
/// `/integrity` compares with the database. A database rolled back to an earlier backup
/// holds fewer events than its witness saw, or other ones.
public struct WitnessedCheckpoint: Sendable, Hashable {
    public var size: UInt64
    public var root: Hash

    public init(size: UInt64, root: Hash) {
        self.size = size
        self.root = root
    }

    /// `<size> <root in hex>`, as the witness stores it.
    public var text: String { "\(size) \(Hex.encode(root))" }

    public init?(text: String) {
        let parts = text.split(separator: " ")
        guard parts.count == 2, let size = UInt64(parts[0]), let root = Hex.decode(String(parts[1])), root.count == 32
        else { return nil }
        self.init(size: size, root: root)
    }

    /// Why the database's tree does not hold this checkpoint, nil when it does: `newest` is
    /// the database's newest signed checkpoint, `subtrees` its stored subtrees.
    public func problem(databaseNewest newest: WitnessedCheckpoint?, subtrees: SubtreeHashes) -> String? {
        guard let newest, newest.size >= size else {
            return "rolled back: a checkpoint of \(size) events was signed, the database's newest covers "
                + "\(newest?.size ?? 0)"
        }
        if newest.size == size {
            return newest.root == root ? nil : "rewritten: the database's tree of \(size) events is another one"
        }
        guard let stored = try? subtrees.hash(of: 0..<size), stored == root else {
            return "rewritten: the database's first \(size) events are not those of the checkpoint signed for them"
        }
        return nil
    }

    /// The subtrees `problem` reads.
    public var addresses: Set<NodeAddress> {
        SubtreeHashes.addresses { _ = try? $0.hash(of: 0..<size) }
    }
}

/// Keeps each log's newest checkpoint outside the database (Redis: `RedisCheckpointWitness`).
public protocol CheckpointWitness: Sendable {
    func newest(origin: String) throws -> WitnessedCheckpoint?
    /// Records `checkpoint` unless a larger one is kept.
    func record(origin: String, _ checkpoint: WitnessedCheckpoint) throws
}
