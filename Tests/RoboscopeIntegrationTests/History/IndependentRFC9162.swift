import Crypto
import Foundation

/// RFC 9162's tree and proof checks written again for the tests, recursively as the RFC
/// defines them, sharing no code with RoboscopeProofs: the service's proofs are judged by
/// an implementation that did not make them.
enum IndependentRFC9162 {
    static func sha256(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }

    static func leaf(_ data: [UInt8]) -> [UInt8] { sha256([0] + data) }

    static func node(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] { sha256([1] + left + right) }

    /// k: the largest power of two smaller than n (n > 1).
    static func split(_ n: Int) -> Int {
        var k = 1
        while k * 2 < n { k *= 2 }
        return k
    }

    /// MTH(D[n]) over leaf hashes.
    static func root(_ leaves: ArraySlice<[UInt8]>) -> [UInt8] {
        if leaves.isEmpty { return sha256([]) }
        if leaves.count == 1 { return leaves.first! }
        let k = split(leaves.count)
        let start = leaves.startIndex
        return node(root(leaves[start..<start + k]), root(leaves[(start + k)...]))
    }

    /// The root an inclusion proof gives for leaf `m` of a tree of `n` leaves: PATH(m,
    /// D[n]) read back from its end, as section 2.1.3.1 builds it.
    static func rootFromInclusion(_ leaf: [UInt8], _ m: Int, _ n: Int, _ proof: ArraySlice<[UInt8]>) -> [UInt8]? {
        if n == 1 { return proof.isEmpty ? leaf : nil }
        guard let last = proof.last else { return nil }
        let k = split(n)
        if m < k {
            return rootFromInclusion(leaf, m, k, proof.dropLast()).map { node($0, last) }
        }
        return rootFromInclusion(leaf, m - k, n - k, proof.dropLast()).map { node(last, $0) }
    }

    /// The old and new roots a consistency proof gives: SUBPROOF(m, D[n], b) read back
    /// from its end, as section 2.1.4.1 builds it. `oldRoot` is the subtree the proof
    /// leaves out when it starts at a complete old tree.
    static func rootsFromConsistency(
        _ m: Int, _ n: Int, _ proof: ArraySlice<[UInt8]>, complete: Bool, oldRoot: [UInt8]
    ) -> (old: [UInt8], new: [UInt8])? {
        if m == n {
            if complete { return proof.isEmpty ? (oldRoot, oldRoot) : nil }
            return proof.count == 1 ? (proof.first!, proof.first!) : nil
        }
        guard let last = proof.last else { return nil }
        let k = split(n)
        if m <= k {
            guard let inner = rootsFromConsistency(m, k, proof.dropLast(), complete: complete, oldRoot: oldRoot)
            else { return nil }
            return (inner.old, node(inner.new, last))
        }
        guard let inner = rootsFromConsistency(m - k, n - k, proof.dropLast(), complete: false, oldRoot: oldRoot)
        else { return nil }
        return (node(last, inner.old), node(last, inner.new))
    }
}
