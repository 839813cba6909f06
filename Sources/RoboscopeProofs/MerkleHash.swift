import Crypto

/// A SHA-256 hash, 32 bytes.
public typealias Hash = [UInt8]

/// The hashes of RFC 9162's Merkle tree (section 2.1.1): a leaf is SHA-256 of 0x00 and
/// its data, a node SHA-256 of 0x01 and its two children, so that no leaf can pass for a
/// node. A tenant's log is such a tree over its events' digests, in `tenant_seq` order.
public enum MerkleHash {
    /// The hash of the tree of no leaves: SHA-256 of nothing.
    public static let empty: Hash = Array(SHA256.hash(data: [UInt8]()))

    public static func leaf(_ data: [UInt8]) -> Hash {
        var hasher = SHA256()
        hasher.update(data: [0x00])
        hasher.update(data: data)
        return Array(hasher.finalize())
    }

    public static func node(_ left: Hash, _ right: Hash) -> Hash {
        var hasher = SHA256()
        hasher.update(data: [0x01])
        hasher.update(data: left)
        hasher.update(data: right)
        return Array(hasher.finalize())
    }

    /// The root of the tree over `leafHashes`.
    public static func root(_ leafHashes: ArraySlice<Hash>) -> Hash {
        switch leafHashes.count {
        case 0: return empty
        case 1: return leafHashes[leafHashes.startIndex]
        default:
            let split = leafHashes.startIndex + Int(TreeShape.largestPowerOfTwo(below: UInt64(leafHashes.count)))
            return node(root(leafHashes[..<split]), root(leafHashes[split...]))
        }
    }
}

/// Where a tree's complete subtrees stand: the subtree at `level` and `index` covers the
/// leaves `index << level` up to `(index + 1) << level`. Every left child in RFC 9162's
/// tree is one of them, so a store that keeps these answers any range's hash.
public struct NodeAddress: Hashable, Sendable {
    public var level: Int
    public var index: UInt64

    public init(level: Int, index: UInt64) {
        self.level = level
        self.index = index
    }

    /// The leaves it covers.
    public var leaves: Range<UInt64> { (index << UInt64(level))..<((index + 1) << UInt64(level)) }
}

/// The arithmetic of the tree's shape, without hashes.
public enum TreeShape {
    /// The largest power of two smaller than `count` (RFC 9162's k); `count` > 1.
    public static func largestPowerOfTwo(below count: UInt64) -> UInt64 {
        precondition(count > 1, "a split needs two leaves or more")
        return UInt64(1) << UInt64(63 - (count - 1).leadingZeroBitCount)
    }

    /// The complete subtree that is exactly `range`, when there is one.
    static func address(of range: Range<UInt64>) -> NodeAddress? {
        let count = UInt64(range.count)
        guard count > 0, count & (count - 1) == 0, range.lowerBound % count == 0 else { return nil }
        let level = count.trailingZeroBitCount
        return NodeAddress(level: level, index: range.lowerBound >> UInt64(level))
    }

    /// The complete subtrees a tree of `size` leaves is made of, left to right (one per
    /// bit of `size`): what a tree that grows past `size` keeps of it.
    public static func frontier(of size: UInt64) -> [NodeAddress] {
        var addresses: [NodeAddress] = []
        for level in stride(from: 63, through: 0, by: -1) where size & (UInt64(1) << UInt64(level)) != 0 {
            addresses.append(NodeAddress(level: level, index: (size >> UInt64(level)) - 1))
        }
        return addresses
    }
}
