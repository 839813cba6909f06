import RoboscopeDomain
import RoboscopeProofs

/// The log's tamper evidence: each event's hash covers the previous hash of its stream
/// and its own content (schema/functions/chain_hash.sql). Checking recomputes every hash
/// of the streams in scope (schema/functions/chain_check.sql).
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

    /// What a check covers.
    public enum Scope: Sendable, Equatable {
        case workSession(EntityID)
        case space(EntityID)
        case wholeLog

        /// The work session or space the check is limited to, as SQL parameters (both nil:
        /// the whole log).
        var parameters: PostgresBinds {
            switch self {
            case .workSession(let id): [id, nil]
            case .space(let id): [nil, id]
            case .wholeLog: [nil, nil]
            }
        }
    }

    /// A check's outcome: how much it recomputed, and the first broken link if any.
    public struct Report: Sendable, Equatable {
        public var checkedEvents: Int64
        public var streams: Int64
        public var brokenLink: BrokenLink?
    }

    /// What `eventlog.chain_check` answers: the counts, and the first broken link if any.
    enum Column: Int, SelectedColumn {
        case checked, streams, position, streamType, streamID, version, problem

        var sql: String {
            switch self {
            case .checked: "checked"
            case .streams: "streams"
            case .position: "position"
            case .streamType: "stream_type"
            case .streamID: "stream_id::text"
            case .version: "stream_version"
            case .problem: "problem"
            }
        }
    }

    public static func check(_ scope: Scope, on connection: PGConnection) throws -> Report {
        let result = try connection.query(
            "SELECT \(Column.selectList) FROM eventlog.chain_check($1::uuid, $2::uuid)", scope.parameters)
        let row = RowReader(result, row: 0, source: "eventlog.chain_check")
        var link: BrokenLink?
        if let position = try row.optionalInt64(Column.position) {
            link = BrokenLink(
                position: position, streamType: try row.text(Column.streamType),
                streamID: try row.text(Column.streamID), version: try row.int64(Column.version),
                problem: try row.text(Column.problem))
        }
        return Report(
            checkedEvents: try row.int64(Column.checked), streams: try row.int64(Column.streams), brokenLink: link)
    }

    /// The first event, by position, whose hash does not hold; nil if the chain is intact.
    public static func firstBrokenLink(on connection: PGConnection) throws -> BrokenLink? {
        try check(.wholeLog, on: connection).brokenLink
    }

    /// How many events the check covers.
    public static func eventCount(on connection: PGConnection) throws -> Int64 {
        try connection.query("SELECT count(*) FROM eventlog.events").scalar("eventlog.events")
    }
}

/// The integrity check for the API (`GET /integrity`), on the pool.
public struct IntegrityChecker: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    public func check(_ scope: HashChain.Scope) async throws -> HashChain.Report {
        try await pool.translatingErrors { try HashChain.check(scope, on: $0) }
    }

    /// The service's signatures over the scope's events (verifiable history).
    public func signatures(_ scope: HashChain.Scope, verifier: NoteVerifier) async throws -> SignatureCheck.Report {
        try await pool.translatingErrors { try SignatureCheck.check(scope, verifier: verifier, on: $0) }
    }
}
