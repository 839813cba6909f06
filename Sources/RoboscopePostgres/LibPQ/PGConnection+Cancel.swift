import CLibPQ

extension PGConnection {
    /// Asks the server to cancel the statement this connection is running (libpq's
    /// `PQcancel`, which opens a connection of its own: safe from any thread while
    /// another thread waits in a query). The statement then fails with SQLSTATE 57014;
    /// nothing happens if it has already ended.
    public func cancelRunningStatement() {
        guard let cancel = PQgetCancel(handle) else { return }
        defer { PQfreeCancel(cancel) }
        var message = [CChar](repeating: 0, count: 256)
        _ = PQcancel(cancel, &message, Int32(message.count))
    }

    /// Sets `statement_timeout` unless it is set so already (a round trip only when a
    /// connection moves between kinds of work; nil: the server's default, none).
    func useStatementTimeout(milliseconds: Int?) throws {
        guard statementTimeoutMilliseconds != .some(milliseconds) else { return }
        try execute("SET statement_timeout = \(milliseconds ?? 0)")
        statementTimeoutMilliseconds = .some(milliseconds)
    }
}
