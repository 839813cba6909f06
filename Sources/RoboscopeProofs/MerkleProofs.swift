/// RFC 9162's proofs (sections 2.1.3 and 2.1.4): made by the service from the subtrees
/// it stores, checked by anyone who holds a signed root.
public enum MerkleProofs {
    public struct Refusal: Error, CustomStringConvertible, Equatable {
        public let description: String

        public init(_ description: String) {
            self.description = description
        }
    }

    // MARK: Making

    /// The inclusion proof of leaf `index` in the tree of the first `size` leaves.
    public static func inclusion(index: UInt64, size: UInt64, from subtrees: SubtreeHashes) throws -> [Hash] {
        guard index < size else { throw Refusal("leaf \(index) is not in a tree of \(size) leaves") }
        return try path(index, 0..<size, subtrees)
    }

    /// The consistency proof between the trees of the first `old` and `new` leaves.
    public static func consistency(old: UInt64, new: UInt64, from subtrees: SubtreeHashes) throws -> [Hash] {
        guard old <= new else { throw Refusal("a tree of \(old) leaves cannot grow into one of \(new)") }
        guard old > 0, old < new else { return [] }
        return try subproof(old, 0..<new, true, subtrees)
    }

    // PATH(m, D[n]), with the leaves as a range of the whole tree's.
    private static func path(_ index: UInt64, _ range: Range<UInt64>, _ subtrees: SubtreeHashes) throws -> [Hash] {
        guard range.count > 1 else { return [] }
        let split = range.lowerBound + TreeShape.largestPowerOfTwo(below: UInt64(range.count))
        if index < split {
            return try path(index, range.lowerBound..<split, subtrees)
                + [subtrees.hash(of: split..<range.upperBound)]
        }
        return try path(index, split..<range.upperBound, subtrees) + [subtrees.hash(of: range.lowerBound..<split)]
    }

    // SUBPROOF(m, D[n], b), `old` counted from the range's start.
    private static func subproof(
        _ old: UInt64, _ range: Range<UInt64>, _ complete: Bool, _ subtrees: SubtreeHashes
    ) throws -> [Hash] {
        if old == UInt64(range.count) { return complete ? [] : [try subtrees.hash(of: range)] }
        let half = TreeShape.largestPowerOfTwo(below: UInt64(range.count))
        let split = range.lowerBound + half
        if old <= half {
            return try subproof(old, range.lowerBound..<split, complete, subtrees)
                + [subtrees.hash(of: split..<range.upperBound)]
        }
        return try subproof(old - half, split..<range.upperBound, false, subtrees)
            + [subtrees.hash(of: range.lowerBound..<split)]
    }

    // MARK: Checking

    /// Checks that `leafHash` is leaf `index` of the tree of `size` leaves whose root is
    /// `root` (RFC 9162, 2.1.3.2).
    public static func verifyInclusion(
        leafHash: Hash, index: UInt64, size: UInt64, proof: [Hash], root: Hash
    ) throws {
        guard index < size else { throw Refusal("leaf \(index) is not in a tree of \(size) leaves") }
        try checkHashes([leafHash, root] + proof)
        var fn = index
        var sn = size - 1
        var hash = leafHash
        for sibling in proof {
            guard sn != 0 else { throw Refusal("the inclusion proof is too long") }
            if fn & 1 == 1 || fn == sn {
                hash = MerkleHash.node(sibling, hash)
                while fn & 1 == 0 && fn != 0 {
                    fn >>= 1
                    sn >>= 1
                }
            } else {
                hash = MerkleHash.node(hash, sibling)
            }
            fn >>= 1
            sn >>= 1
        }
        guard sn == 0 else { throw Refusal("the inclusion proof is too short") }
        guard hash == root else { throw Refusal("the inclusion proof leads to another root") }
    }

    /// Checks that the tree of `oldSize` leaves and root `oldRoot` is the start of the
    /// tree of `newSize` leaves and root `newRoot` (RFC 9162, 2.1.4.2).
    public static func verifyConsistency(
        oldSize: UInt64, newSize: UInt64, oldRoot: Hash, newRoot: Hash, proof: [Hash]
    ) throws {
        guard oldSize <= newSize else {
            throw Refusal("the tree shrank from \(oldSize) to \(newSize) leaves")
        }
        // Every tree starts with the empty one: a verifier that kept nothing has nothing to check.
        guard oldSize > 0 else { throw Refusal("no tree is checked against the empty one") }
        if oldSize == newSize {
            guard proof.isEmpty else { throw Refusal("a tree is its own start: the proof must be empty") }
            guard oldRoot == newRoot else { throw Refusal("two roots for the tree of \(newSize) leaves") }
            return
        }
        guard !proof.isEmpty else { throw Refusal("the consistency proof is empty") }
        try checkHashes([oldRoot, newRoot] + proof)
        var path = proof
        if oldSize & (oldSize - 1) == 0 { path.insert(oldRoot, at: 0) }
        var fn = oldSize - 1
        var sn = newSize - 1
        while fn & 1 == 1 {
            fn >>= 1
            sn >>= 1
        }
        var oldHash = path[0]
        var newHash = path[0]
        for sibling in path.dropFirst() {
            guard sn != 0 else { throw Refusal("the consistency proof is too long") }
            if fn & 1 == 1 || fn == sn {
                oldHash = MerkleHash.node(sibling, oldHash)
                newHash = MerkleHash.node(sibling, newHash)
                while fn & 1 == 0 && fn != 0 {
                    fn >>= 1
                    sn >>= 1
                }
            } else {
                newHash = MerkleHash.node(newHash, sibling)
            }
            fn >>= 1
            sn >>= 1
        }
        guard sn == 0 else { throw Refusal("the consistency proof is too short") }
        guard oldHash == oldRoot else { throw Refusal("the consistency proof does not lead to the old root") }
        guard newHash == newRoot else { throw Refusal("the consistency proof does not lead to the new root") }
    }

    private static func checkHashes(_ hashes: [Hash]) throws {
        guard hashes.allSatisfy({ $0.count == 32 }) else { throw Refusal("a hash is 32 bytes") }
    }
}
