/// The hash of any range of a tree's leaves, from the complete subtrees a store keeps
/// (`NodeAddress`): a range that is one of them is read, any other is split as RFC 9162
/// splits a tree, so a tree of n leaves costs at most about log2(n) squared reads.
public struct SubtreeHashes {
    let node: (NodeAddress) throws -> Hash

    public init(node: @escaping (NodeAddress) throws -> Hash) {
        self.node = node
    }

    public func hash(of range: Range<UInt64>) throws -> Hash {
        if range.isEmpty { return MerkleHash.empty }
        if let address = TreeShape.address(of: range) { return try node(address) }
        let split = range.lowerBound + TreeShape.largestPowerOfTwo(below: UInt64(range.count))
        return MerkleHash.node(
            try hash(of: range.lowerBound..<split), try hash(of: split..<range.upperBound))
    }

    /// Which stored subtrees `body` reads, without their hashes: what a store fetches in
    /// one query before it runs `body` for real. The reads a proof makes depend on the
    /// tree's shape only, never on a hash.
    public static func addresses(readBy body: (SubtreeHashes) throws -> Void) rethrows -> Set<NodeAddress> {
        final class Recorder {
            var addresses: Set<NodeAddress> = []
        }
        let recorder = Recorder()
        try body(
            SubtreeHashes { address in
                recorder.addresses.insert(address)
                return MerkleHash.empty
            })
        return recorder.addresses
    }
}
