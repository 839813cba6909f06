import RoboscopeProofs
import Testing

/// A tree grown in steps, as the checkpointer grows a tenant's, has the root of the tree
/// built at once, and the subtrees it stored answer proofs that verify.
struct TreeGrowthTests {
    static func leaf(_ number: Int) -> Hash { MerkleHash.leaf(Array("event \(number)".utf8)) }

    @Test(arguments: [[1, 1, 1, 1, 1, 1, 1], [3, 5, 8, 1, 13, 2], [64, 1, 63], [100], [7, 0, 9]])
    func growingInStepsGivesTheRootOfTheWholeTree(steps: [Int]) throws {
        var stored: [NodeAddress: Hash] = [:]
        var size: UInt64 = 0
        for step in steps {
            let leaves = (Int(size)..<Int(size) + step).map(Self.leaf)
            let frontier = Dictionary(uniqueKeysWithValues: TreeShape.frontier(of: size).map { ($0, stored[$0]!) })
            let growth = try TreeGrowth(from: size, frontier: frontier, appending: leaves)
            stored.merge(growth.newNodes) { old, _ in old }
            size = growth.size
            let all = (0..<Int(size)).map(Self.leaf)
            #expect(growth.root == MerkleHash.root(all[...]))
        }
        let subtrees = SubtreeHashes { stored[$0]! }
        let root = try subtrees.hash(of: 0..<size)
        for index in stride(from: 0, to: size, by: max(1, Int(size) / 7)) {
            let proof = try MerkleProofs.inclusion(index: index, size: size, from: subtrees)
            try MerkleProofs.verifyInclusion(
                leafHash: Self.leaf(Int(index)), index: index, size: size, proof: proof, root: root)
        }
        for old in stride(from: UInt64(1), to: size, by: max(1, Int(size) / 5)) {
            let proof = try MerkleProofs.consistency(old: old, new: size, from: subtrees)
            try MerkleProofs.verifyConsistency(
                oldSize: old, newSize: size, oldRoot: try subtrees.hash(of: 0..<old), newRoot: root, proof: proof)
        }
    }

    @Test func aProofReadsOnlyAFewStoredSubtrees() throws {
        let reads = SubtreeHashes.addresses { subtrees in
            _ = try? MerkleProofs.inclusion(index: 123_456, size: 1_000_000, from: subtrees)
        }
        #expect(reads.count <= 20 * 20)
        #expect(reads.count >= 19)
    }

    @Test func aMissingFrontierIsRefused() {
        #expect(throws: MerkleProofs.Refusal.self) {
            try TreeGrowth(from: 5, frontier: [:], appending: [Self.leaf(5)])
        }
    }
}
