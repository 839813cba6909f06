import Foundation
import RoboscopeProofs
import RoboscopeWire
import Testing

/// RoboscopeProofs against a public implementation: transparency-dev/merkle's vectors.
struct MerkleVectorTests {
    /// The eight leaves the vectors were made over (RFC 6962's reference inputs).
    static let leaves: [[UInt8]] = [
        "", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f",
    ].map { Hex.decode($0)! }

    static let vectorFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Vectors")

    struct InclusionVector: Decodable {
        let leafIdx: UInt64
        let treeSize: UInt64
        let root: Data
        let leafHash: Data
        let proof: [Data]?
        let desc: String
        let wantErr: Bool
    }

    struct ConsistencyVector: Decodable {
        let size1: UInt64
        let size2: UInt64
        let root1: Data
        let root2: Data
        let proof: [Data]?
        let desc: String
        let wantErr: Bool
    }

    static func vectors<Vector: Decodable>(_ kind: String, as _: Vector.Type) throws -> [(String, Vector)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: vectorFolder.path)
            .filter { $0.hasPrefix(kind + "__") && $0.hasSuffix(".json") }.sorted()
        return try names.map { name in
            (
                name,
                try JSONDecoder().decode(Vector.self, from: Data(contentsOf: vectorFolder.appendingPathComponent(name)))
            )
        }
    }

    /// A store that holds every complete subtree of the reference tree.
    static func referenceSubtrees(size: UInt64) -> SubtreeHashes {
        SubtreeHashes { address in
            let range = address.leaves
            return MerkleHash.root(leaves[Int(range.lowerBound)..<Int(range.upperBound)].map(MerkleHash.leaf)[...])
        }
    }

    @Test func everyInclusionVectorIsJudgedAsTheReferenceJudgesIt() throws {
        let vectors = try Self.vectors("inclusion", as: InclusionVector.self)
        #expect(vectors.count > 60)
        for (name, vector) in vectors {
            var refusal: (any Error)?
            do {
                try MerkleProofs.verifyInclusion(
                    leafHash: Array(vector.leafHash), index: UInt64(vector.leafIdx), size: UInt64(vector.treeSize),
                    proof: (vector.proof ?? []).map { Array($0) }, root: Array(vector.root))
            } catch {
                refusal = error
            }
            #expect((refusal != nil) == vector.wantErr, "\(name): \(vector.desc)")
        }
    }

    @Test func everyConsistencyVectorIsJudgedAsTheReferenceJudgesIt() throws {
        let vectors = try Self.vectors("consistency", as: ConsistencyVector.self)
        #expect(vectors.count > 60)
        for (name, vector) in vectors {
            var refusal: (any Error)?
            do {
                try MerkleProofs.verifyConsistency(
                    oldSize: UInt64(vector.size1), newSize: UInt64(vector.size2), oldRoot: Array(vector.root1),
                    newRoot: Array(vector.root2), proof: (vector.proof ?? []).map { Array($0) })
            } catch {
                refusal = error
            }
            #expect((refusal != nil) == vector.wantErr, "\(name): \(vector.desc)")
        }
    }

    @Test func theProofsTheServiceMakesAreTheReferenceProofs() throws {
        var compared = 0
        // The numbered folders hold the vectors over the reference leaves.
        let overReferenceLeaves = { (name: String) in name.split(separator: "__")[1].allSatisfy(\.isNumber) }
        for (name, vector) in try Self.vectors("inclusion", as: InclusionVector.self)
        where !vector.wantErr && overReferenceLeaves(name) {
            let size = UInt64(vector.treeSize)
            let subtrees = Self.referenceSubtrees(size: size)
            #expect(try subtrees.hash(of: 0..<size) == Array(vector.root), "\(name)")
            let proof = try MerkleProofs.inclusion(index: UInt64(vector.leafIdx), size: size, from: subtrees)
            #expect(proof == (vector.proof ?? []).map { Array($0) }, "\(name)")
            compared += 1
        }
        for (name, vector) in try Self.vectors("consistency", as: ConsistencyVector.self)
        where !vector.wantErr && vector.size1 < vector.size2 && overReferenceLeaves(name) {
            let subtrees = Self.referenceSubtrees(size: UInt64(vector.size2))
            let proof = try MerkleProofs.consistency(
                old: UInt64(vector.size1), new: UInt64(vector.size2), from: subtrees)
            #expect(proof == (vector.proof ?? []).map { Array($0) }, "\(name)")
            compared += 1
        }
        #expect(compared >= 8)
    }
}
