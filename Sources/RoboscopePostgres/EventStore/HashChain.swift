/// The log's tamper evidence: each event's hash covers the previous hash of its stream
/// and its own content (schema/0007_hash_chain.sql). Checking recomputes every hash.
public enum HashChain {
    public struct BrokenLink: Sendable, Equatable, CustomStringConvertible {
        public var position: Int64
        public var streamType: String
        public var streamID: String
        public var version: Int64
        public var problem: String

        public var description: String {
            "broken link at position \(position) (\(streamType):\(streamID) version \(version)): \(problem)"
        }
    }

    /// The first event, by position, whose hash does not hold; nil if the chain is intact.
    public static func firstBrokenLink(on connection: PGConnection) throws -> BrokenLink? {
        let result = try connection.query(
            "SELECT position, stream_type, stream_id::text, stream_version, problem FROM eventlog.first_broken_link()"
        )
        guard result.rowCount == 1, let position = result.int64(0, 0) else { return nil }
        return BrokenLink(
            position: position, streamType: result.string(0, 1) ?? "", streamID: result.string(0, 2) ?? "",
            version: result.int64(0, 3) ?? 0, problem: result.string(0, 4) ?? ""
        )
    }

    /// How many events the check covers.
    public static func eventCount(on connection: PGConnection) throws -> Int64 {
        try connection.query("SELECT count(*) FROM eventlog.events").int64(0, 0) ?? 0
    }
}
