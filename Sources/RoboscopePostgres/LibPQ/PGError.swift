/// A failure reported by libpq or by the server, with the fields callers branch on.
public struct PGError: Error, Sendable, CustomStringConvertible {
    public struct Kind: Hashable, Sendable {
        let name: String
        /// The server cannot be reached, or the connection broke.
        public static let connection = Kind(name: "connection")
        /// The server refused the statement; `sqlState` says why.
        public static let statement = Kind(name: "statement")
        /// A commit whose outcome is not known: its wait for the synchronous standby was
        /// cancelled (the server then says so in a warning and reports success, though the
        /// standby may never have the transaction), or its connection broke before the
        /// answer. It may be stored or not; only a retry with its idempotency key can tell.
        public static let commitUnknown = Kind(name: "commit_unknown")
    }

    public var kind: Kind
    public var message: String
    /// The five-character SQLSTATE (`23505`, or our own `RB409`).
    public var sqlState: String?
    public var detail: String?
    public var constraint: String?

    public init(
        _ kind: Kind, _ message: String, sqlState: String? = nil, detail: String? = nil, constraint: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.constraint = constraint
    }

    public var description: String {
        "postgres \(kind.name) error\(sqlState.map { " \($0)" } ?? ""): \(message)"
    }
}
