import CLibPQ
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Owns one libpq connection. Its calls block: use it from one thread at a time,
/// never from Swift's cooperative pool or an event loop (see `PostgresPool`).
public final class PGConnection {
    let handle: OpaquePointer
    /// The names of the statements `query(prepared:)` prepared on this connection, by text.
    private var preparedNames: [String: String] = [:]
    /// A bound on them: only a few fixed statements are worth preparing, and a caller
    /// that passes generated text must not grow the server's memory without end. A
    /// connection that serves everything prepares about 30: the append and its reads, 13
    /// shapes of the marker reads, and a dozen of a topic's reads (DeliveryReader).
    static let maxPreparedStatements = 64
    /// The `statement_timeout` set on the connection (`useStatementTimeout`): unknown
    /// (outer nil) until set once.
    var statementTimeoutMilliseconds: Int??
    /// What the statements run since `startNotingOperations()` did; nil when not noting.
    var notedOperations: [String]?

    /// Connects with a libpq connection string or `postgres://` URL.
    public init(_ url: String) throws {
        guard let handle = PQconnectdb(Self.withDefaults(url)) else {
            throw PGError(.connection, "libpq could not allocate a connection")
        }
        // From here on deinit owns the handle, also when init throws.
        self.handle = handle
        guard PQstatus(handle) == CONNECTION_OK else {
            throw connectionError
        }
        // Server notices (NOTICE: … already exists, skipping) are not errors and stay off
        // stderr; the one warning that changes a statement's meaning is kept.
        PQsetNoticeReceiver(handle, Self.receiveNotice, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Set by the notice receiver when the server cancelled a commit's wait for the
    /// synchronous standby, during the statement libpq is running; `check` turns it into
    /// a `commitUnknown` error for that statement.
    private var syncWaitCancelled = false

    /// libpq calls this on the thread running the statement, before the statement's result
    /// is returned. Postgres words the warning "canceling wait for synchronous replication
    /// due to user request" (a cancel) or "canceling the wait for synchronous replication
    /// and terminating connection …" (a terminated backend); SQLSTATE does not tell it from
    /// other warnings, so the text does (the server's messages are in English unless
    /// `lc_messages` says otherwise: docs/operations.md).
    private static let receiveNotice: PQnoticeReceiver = { argument, result in
        guard let argument, let result else { return }
        let connection = Unmanaged<PGConnection>.fromOpaque(argument).takeUnretainedValue()
        guard let text = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map({ String(cString: $0) })
        else { return }
        if text.contains("wait for synchronous replication") { connection.syncWaitCancelled = true }
    }

    deinit {
        PQfinish(handle)
    }

    /// Set when a statement is refused because the server is read-only (SQLSTATE 25006):
    /// it was a primary and is a standby now (a demoted or partitioned primary behind a
    /// proxy that has not cut it yet, or a multi-host URL's first host after a failover).
    /// Nothing written can succeed here again, so the connection counts as broken and its
    /// pool replaces it: the next connect finds the primary (HAProxy's check, or libpq's
    /// `target_session_attrs=read-write`).
    private(set) var isOnStandby = false

    /// True inside a transaction the caller began (`BEGIN`, `transaction`).
    public var isInTransaction: Bool { PQtransactionStatus(handle) != PQTRANS_IDLE }

    /// Also when a pipeline could not be finished (`pipeline(_:ending:)`): results are
    /// still pending, which no later statement can get past.
    public var isBroken: Bool { isLost || PQpipelineStatus(handle) != PQ_PIPELINE_OFF }

    /// The connection is gone, or serves no writes (`isOnStandby`).
    private var isLost: Bool { isOnStandby || PQstatus(handle) != CONNECTION_OK }

    /// Runs one statement with parameters (`$1`, `$2`, …); nil is SQL NULL.
    @discardableResult
    public func query(_ sql: String, _ parameters: PostgresBinds = []) throws -> PGResult {
        note(sql)
        let result = withParameterValues(parameters) { values in
            PQexecParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        return try check(result)
    }

    /// Runs one statement of fixed text prepared on this connection, so that the server
    /// parses and plans it once per connection instead of at each call (the hot writes
    /// and reads; a statement whose best plan depends on its parameters stays with
    /// `query`). Past `maxPreparedStatements` texts it runs unprepared.
    @discardableResult
    public func query(prepared sql: String, _ parameters: PostgresBinds = []) throws -> PGResult {
        guard let name = try preparedName(sql, parameterCount: parameters.count) else {
            return try query(sql, parameters)
        }
        note(sql)
        let result = withParameterValues(parameters) { values in
            PQexecPrepared(handle, name, Int32(parameters.count), values, nil, nil, 0)
        }
        return try check(result)
    }

    func preparedName(_ sql: String, parameterCount: Int) throws -> String? {
        if let name = preparedNames[sql] { return name }
        guard preparedNames.count < Self.maxPreparedStatements else { return nil }
        let name = "roboscope_\(preparedNames.count)"
        try check(PQprepare(handle, name, sql, Int32(parameterCount), nil))
        preparedNames[sql] = name
        return name
    }

    /// Runs `body` with the parameters as the C strings libpq takes, nil for SQL NULL.
    func withParameterValues<T>(_ parameters: PostgresBinds, _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T
    {
        let copies: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.flatMap { strdup($0.postgresText) } }
        defer { copies.forEach { free($0) } }
        return copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { body($0.baseAddress) }
    }

    /// The connection's last error, as libpq words it.
    var connectionError: PGError { PGError(.connection, Self.trimmed(String(cString: PQerrorMessage(handle)))) }

    /// Runs a script of several statements without parameters (migrations, setup).
    @discardableResult
    public func execute(_ script: String) throws -> PGResult {
        note(script)
        return try check(PQexec(handle, script))
    }

    /// Runs `body` in a transaction, committing when it returns and rolling back when it
    /// throws. A `COMMIT` whose connection broke before its answer is `commitUnknown`.
    public func transaction<T>(_ begin: String = "BEGIN", _ body: () throws -> T) throws -> T {
        try execute(begin)
        do {
            let value = try body()
            do {
                try execute("COMMIT")
            } catch let error as PGError where error.kind == .connection {
                throw PGError(.commitUnknown, "the connection broke before the commit's answer: \(error.message)")
            }
            return value
        } catch {
            if !isBroken { _ = try? execute("ROLLBACK") }
            throw error
        }
    }

    @discardableResult
    func check(_ result: OpaquePointer?) throws -> PGResult {
        if syncWaitCancelled {
            syncWaitCancelled = false
            if let result { PQclear(result) }
            throw PGError(
                .commitUnknown,
                "the wait for the synchronous standby was cancelled: committed here, maybe not on the standby")
        }
        guard let result else {
            throw connectionError
        }
        let owned = PGResult(result)
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return owned
        default:
            let field = { (code: Int32) -> String? in
                PQresultErrorField(result, code).map { String(cString: $0) }
            }
            let message = field(Int32(UInt8(ascii: "M"))) ?? Self.trimmed(String(cString: PQresultErrorMessage(result)))
            if isLost {
                throw PGError(.connection, message)
            }
            var sqlState = field(Int32(UInt8(ascii: "C")))
            // A function that takes a transaction id (the replay barrier's logical message)
            // says it is on a standby with an internal error, not with 25006.
            if sqlState == "XX000" && message.hasPrefix("cannot assign TransactionIds during recovery") {
                sqlState = "25006"
            }
            if sqlState == "25006" { isOnStandby = true }
            throw PGError(
                .statement, message,
                sqlState: sqlState,
                detail: field(Int32(UInt8(ascii: "D"))),
                constraint: field(Int32(UInt8(ascii: "n")))
            )
        }
    }

    /// A dead server must fail a connect quickly, so a timeout is set unless the URL has one.
    static func withDefaults(_ url: String) -> String {
        guard !url.contains("connect_timeout") else { return url }
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return url + (url.contains("?") ? "&" : "?") + "connect_timeout=2"
        }
        return url + " connect_timeout=2"
    }

    static func trimmed(_ text: String) -> String {
        var text = text
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }
}
