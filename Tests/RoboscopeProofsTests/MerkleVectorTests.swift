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

    /// A vector file: its inputs, the proof, what it tests, and whether the reference
    /// refuses it (the file is one flat object).
    @dynamicMemberLookup
    struct Vector<Inputs: Decodable>: Decodable {
        let inputs: Inputs
        let proof: [Data]?
        let desc: String
        let wantErr: Bool

        enum CodingKeys: String, CodingKey { case proof, desc, wantErr }

        init(from decoder: any Decoder) throws {
            inputs = try Inputs(from: decoder)
            let container = try decoder.container(keyedBy: CodingKeys.self)
            proof = try container.decodeIfPresent([Data].self, forKey: .proof)
            desc = try container.decode(String.self, forKey: .desc)
            wantErr = try container.decode(Bool.self, forKey: .wantErr)
        }

        subscript<Value>(dynamicMember input: KeyPath<Inputs, Value>) -> Value { inputs[keyPath: input] }
    }

    struct Inclusion: Decodable {
        let leafIdx, treeSize: UInt64
        let root, leafHash: Data
    }

    struct Consistency: Decodable {
        let size1, size2: UInt64
        let root1, root2: Data
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

    /// Each vector of `kind` is refused by `verify` (given the vector and its proof) when
    /// the reference refuses it, and only then.
    static func expectJudgedAsTheReference<Inputs: Decodable>(
        _ kind: String, _ type: Inputs.Type, _ verify: (Inputs, [[UInt8]]) throws -> Void
    ) throws {
        let vectors = try vectors(kind, as: Vector<Inputs>.self)
        #expect(vectors.count > 60)
        for (name, vector) in vectors {
            let refused = (try? verify(vector.inputs, (vector.proof ?? []).map { Array($0) })) == nil
            #expect(refused == vector.wantErr, "\(name): \(vector.desc)")
        }
    }

    @Test func everyInclusionVectorIsJudgedAsTheReferenceJudgesIt() throws {
        try Self.expectJudgedAsTheReference("inclusion", Inclusion.self) { vector, proof in
            try MerkleProofs.verifyInclusion(
                leafHash: Array(vector.leafHash), index: vector.leafIdx, size: vector.treeSize, proof: proof,
                root: Array(vector.root))
        }
    }

    @Test func everyConsistencyVectorIsJudgedAsTheReferenceJudgesIt() throws {
        try Self.expectJudgedAsTheReference("consistency", Consistency.self) { vector, proof in
            try MerkleProofs.verifyConsistency(
                oldSize: vector.size1, newSize: vector.size2, oldRoot: Array(vector.root1),
                newRoot: Array(vector.root2), proof: proof)
        }
    }

    @Test func theProofsTheServiceMakesAreTheReferenceProofs() throws {
        var compared = 0
        // The numbered folders hold the vectors over the reference leaves.
        let overReferenceLeaves = { (name: String) in name.split(separator: "__")[1].allSatisfy(\.isNumber) }
        for (name, vector) in try Self.vectors("inclusion", as: Vector<Inclusion>.self)
        where !vector.wantErr && overReferenceLeaves(name) {
            let size = UInt64(vector.treeSize)
            let subtrees = Self.referenceSubtrees(size: size)
            #expect(try subtrees.hash(of: 0..<size) == Array(vector.root), "\(name)")
            let proof = try MerkleProofs.inclusion(index: UInt64(vector.leafIdx), size: size, from: subtrees)
            #expect(proof == (vector.proof ?? []).map { Array($0) }, "\(name)")
            compared += 1
        }
        for (name, vector) in try Self.vectors("consistency", as: Vector<Consistency>.self)
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
