import CLibPQ

extension PGConnection {
    /// One statement of a pipeline: fixed text, prepared on the connection (unprepared past
    /// `maxPreparedStatements`), with its parameters.
    public struct PipelinedStatement {
        public var sql: String
        public var parameters: PostgresBinds

        public init(_ sql: String, _ parameters: PostgresBinds = []) {
            self.sql = sql
            self.parameters = parameters
        }
    }

    /// Runs `statements` in one round trip (libpq's pipeline mode, ended by a sync) and
    /// returns their results, in order. Statements outside a transaction block run in one
    /// of their own, committed at the sync; a `BEGIN` among them opens one that stays open
    /// for the next pipeline. The signed append sends `BEGIN` and the append in one
    /// pipeline, then the signatures and `COMMIT` in another: two round trips of prepared
    /// statements where scripts had the server parse and plan the append's document at
    /// every call.
    ///
    /// The first failure is thrown once every result has been read; the statements after
    /// it did not run. A connection the pipeline could not finish on counts as broken
    /// (`isBroken`), so its pool replaces it.
    @discardableResult
    public func pipeline(_ statements: [PipelinedStatement]) throws -> [PGResult] {
        if statements.isEmpty { return [] }
        // Preparing is a synchronous call, which pipeline mode refuses: first, then.
        let names = try statements.map { try preparedName($0.sql, parameterCount: $0.parameters.count) }
        guard PQenterPipelineMode(handle) == 1 else { throw connectionError }
        defer { PQexitPipelineMode(handle) }
        for (statement, name) in zip(statements, names) {
            note(statement.sql)
            let count = Int32(statement.parameters.count)
            let sent = withParameterValues(statement.parameters) { values in
                if let name { return PQsendQueryPrepared(handle, name, count, values, nil, nil, 0) }
                return PQsendQueryParams(handle, statement.sql, count, nil, values, nil, nil, 0)
            }
            guard sent == 1 else { throw connectionError }
        }
        guard PQpipelineSync(handle) == 1, PQflush(handle) == 0 else { throw connectionError }

        var results: [PGResult] = []
        var failure: (any Error)?
        for _ in statements {
            guard let result = PQgetResult(handle) else {
                failure = failure ?? connectionError
                break
            }
            if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                PQclear(result)
                failure = failure ?? connectionError
            } else {
                do { results.append(try check(result)) } catch { failure = failure ?? error }
            }
            // The null that ends each statement's results.
            if let extra = PQgetResult(handle) { PQclear(extra) }
        }
        // After a failure the server skipped everything up to the sync.
        try readToSync()
        if let failure { throw failure }
        return results
    }

    /// Reads and drops results up to the pipeline's sync point.
    private func readToSync() throws {
        while true {
            guard let result = PQgetResult(handle) else {
                if PQstatus(handle) != CONNECTION_OK { throw connectionError }
                continue
            }
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { return }
        }
    }
}
