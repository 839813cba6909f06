/// What a tree that grows by some leaves adds to a store of complete subtrees, and its
/// new root, from what the store kept of the smaller tree: its frontier
/// (`TreeShape.frontier(of:)`), one subtree per bit of its size. Every new subtree's
/// left child is new too or one of those.
public struct TreeGrowth: Sendable {
    /// The complete subtrees the grown tree has and the smaller one had not.
    public var newNodes: [NodeAddress: Hash]
    public var root: Hash
    public var size: UInt64

    public init(from oldSize: UInt64, frontier: [NodeAddress: Hash], appending leafHashes: [Hash]) throws {
        let newSize = oldSize + UInt64(leafHashes.count)
        var nodes: [NodeAddress: Hash] = [:]
        for (offset, leaf) in leafHashes.enumerated() {
            nodes[NodeAddress(level: 0, index: oldSize + UInt64(offset))] = leaf
        }
        var level = 1
        while (UInt64(1) << UInt64(level)) <= newSize {
            let width = UInt64(1) << UInt64(level)
            // The subtrees of this level that end past the old size and not past the new.
            let first = oldSize / width
            let end = newSize / width
            var index = first
            while index < end {
                let left = NodeAddress(level: level - 1, index: 2 * index)
                let right = NodeAddress(level: level - 1, index: 2 * index + 1)
                guard let leftHash = nodes[left] ?? frontier[left], let rightHash = nodes[right] ?? frontier[right]
                else { throw MerkleProofs.Refusal("the frontier of the tree of \(oldSize) leaves is incomplete") }
                nodes[NodeAddress(level: level, index: index)] = MerkleHash.node(leftHash, rightHash)
                index += 1
            }
            level += 1
        }
        let known = nodes
        root = try SubtreeHashes { address in
            guard let hash = known[address] ?? frontier[address] else {
                throw MerkleProofs.Refusal("the frontier of the tree of \(oldSize) leaves is incomplete")
            }
            return hash
        }.hash(of: 0..<newSize)
        newNodes = nodes
        size = newSize
    }
}
