import Foundation

/// A tenant's tree at one size, as c2sp.org/tlog-checkpoint writes it: the origin, the
/// size in decimal and the root in base64, each on its own line. The service signs it
/// as a note (`HistorySigner.signedNote`).
public struct Checkpoint: Sendable, Hashable {
    /// `roboscope/<deployment>/<tenant>`: whose log, so that no other log's checkpoint
    /// passes for it.
    public var origin: String
    public var size: UInt64
    public var root: Hash

    public init(origin: String, size: UInt64, root: Hash) {
        self.origin = origin
        self.size = size
        self.root = root
    }

    public static func origin(deployment: String, tenant: String) -> String {
        "roboscope/\(deployment)/\(tenant)"
    }

    public var text: String {
        "\(origin)\n\(size)\n\(Data(root).base64EncodedString())\n"
    }

    /// Reads a checkpoint from a note's verified text.
    public init(text: String) throws {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 4, lines.last == "", let size = UInt64(lines[1]),
            let root = Data(base64Encoded: String(lines[2])), root.count == 32
        else { throw NoteVerifier.Malformed("a checkpoint is its origin, its size and its root, a line each") }
        self.init(origin: String(lines[0]), size: size, root: Array(root))
    }

    /// Opens `note` with `verifier` and reads its checkpoint.
    public init(note: String, verifier: NoteVerifier) throws {
        try self.init(text: try verifier.open(note))
    }
}
