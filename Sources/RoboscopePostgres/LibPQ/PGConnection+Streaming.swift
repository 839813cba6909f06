import CLibPQ

extension PGConnection {
    /// Runs one statement and hands each row to `body` as it arrives (libpq's single-row
    /// mode), each as a one-row result: the caller works on a row while the server is
    /// still producing the next ones, instead of waiting for the whole result first.
    ///
    /// When `body` throws, the rest of the rows are read and dropped (the connection
    /// stays usable) and the error is rethrown.
    public func stream(_ sql: String, _ parameters: PostgresBinds = [], row body: (PGResult) throws -> Void) throws {
        note(sql)
        let sent = withParameterValues(parameters) { values in
            PQsendQueryParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        try receive(sent: sent, row: body)
    }

    /// `stream(_:_:row:)` of a statement of fixed text prepared on this connection, as
    /// `query(prepared:_:)` prepares it: parsed and planned once per connection.
    public func stream(
        prepared sql: String, _ parameters: PostgresBinds = [], row body: (PGResult) throws -> Void
    ) throws {
        guard let name = try preparedName(sql, parameterCount: parameters.count) else {
            return try stream(sql, parameters, row: body)
        }
        note(sql)
        let sent = withParameterValues(parameters) { values in
            PQsendQueryPrepared(handle, name, Int32(parameters.count), values, nil, nil, 0)
        }
        try receive(sent: sent, row: body)
    }

    /// The rows of the statement just sent (`sent`: what the send returned), one at a time.
    private func receive(sent: Int32, row body: (PGResult) throws -> Void) throws {
        guard sent == 1 else { throw connectionError }
        PQsetSingleRowMode(handle)
        var failure: (any Error)?
        while let result = PQgetResult(handle) {
            guard failure == nil else {
                PQclear(result)
                continue
            }
            switch PQresultStatus(result) {
            case PGRES_SINGLE_TUPLE:
                do { try body(PGResult(result)) } catch { failure = error }
            case PGRES_TUPLES_OK:
                PQclear(result)  // the end of the rows
            default:
                do { _ = try check(result) } catch { failure = error }
            }
        }
        if let failure { throw failure }
        if isBroken { throw connectionError }
    }
}
