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
        try send(statements, names)
        guard PQpipelineSync(handle) == 1, PQflush(handle) == 0 else { throw connectionError }
        let (results, failure) = readResults(of: statements.count)
        // After a failure the server skipped everything up to the sync.
        try readToSync()
        if let failure { throw failure }
        return results
    }

    /// What went wrong in a two-stage pipeline, and whether it can have committed.
    public enum StagedFailure: Error {
        /// Before the sync was sent: the transaction did not commit.
        case notCommitted(any Error)
        /// The connection broke after the sync was sent: the commit's outcome is unknown.
        case commitUnknown(PGError)
    }

    /// Runs `first`, reads its results, then the statements `then` makes of them, in one
    /// implicit transaction that commits at the one sync sent after both (a flush request
    /// asks the server for `first`'s results before it). The signed append's two round
    /// trips: the append, then the signature of what it assigned, with no `BEGIN` and no
    /// `COMMIT` statement for the server to run. `later`: the texts `then` may use,
    /// prepared beforehand (pipeline mode refuses to prepare). When `then` throws, the
    /// pipeline is left unsynced, so the connection counts as broken (`isBroken`) and its
    /// pool closes it: the server rolls the transaction back.
    public func pipeline(
        _ first: [PipelinedStatement], preparing later: [String],
        then next: ([PGResult]) throws -> [PipelinedStatement]
    ) throws(StagedFailure) -> (first: [PGResult], then: [PGResult]) {
        let names: [String?]
        do {
            names = try first.map { try preparedName($0.sql, parameterCount: $0.parameters.count) }
            for sql in later { _ = try preparedName(sql, parameterCount: 0) }
        } catch { throw .notCommitted(error) }
        guard PQenterPipelineMode(handle) == 1 else { throw .notCommitted(connectionError) }
        let firstResults: [PGResult]
        let statements: [PipelinedStatement]
        do {
            try send(first, names)
            guard PQsendFlushRequest(handle) == 1, PQflush(handle) == 0 else { throw connectionError }
            let (results, failure) = readResults(of: first.count)
            if let failure {
                // The server skips the rest up to a sync, which rolls the transaction back.
                guard PQpipelineSync(handle) == 1, PQflush(handle) == 0 else { throw connectionError }
                try readToSync()
                PQexitPipelineMode(handle)
                throw failure
            }
            firstResults = results
            statements = try next(results)
            try send(statements, statements.map { preparedNames[$0.sql] })
            guard PQpipelineSync(handle) == 1, PQflush(handle) == 0 else { throw connectionError }
        } catch { throw .notCommitted(error) }
        let (results, failure) = readResults(of: statements.count)
        var committing: (any Error)?
        // Also what the commit at the sync refused (a deferred constraint).
        do { try readToSync() } catch { committing = error }
        PQexitPipelineMode(handle)
        if syncWaitCancelled {
            syncWaitCancelled = false
            throw .commitUnknown(Self.syncWaitCancelledError)
        }
        if let error = failure ?? committing {
            // Past the sync, a broken connection may have committed.
            if let error = error as? PGError, error.kind == .connection || error.kind == .commitUnknown {
                throw .commitUnknown(error)
            }
            throw .notCommitted(error)
        }
        return (firstResults, results)
    }

    private func send(_ statements: [PipelinedStatement], _ names: [String?]) throws {
        for (statement, name) in zip(statements, names) {
            note(statement.sql)
            let count = Int32(statement.parameters.count)
            let sent = withParameterValues(statement.parameters) { values in
                if let name { return PQsendQueryPrepared(handle, name, count, values, nil, nil, 0) }
                return PQsendQueryParams(handle, statement.sql, count, nil, values, nil, nil, 0)
            }
            guard sent == 1 else { throw connectionError }
        }
    }

    /// The results of `count` statements sent, and the first failure among them (the
    /// statements after it did not run).
    private func readResults(of count: Int) -> (results: [PGResult], failure: (any Error)?) {
        var results: [PGResult] = []
        var failure: (any Error)?
        for _ in 0..<count {
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
        return (results, failure)
    }

    /// Reads results up to the pipeline's sync point, throwing the first error among
    /// them: what the commit of an implicit transaction at the sync refused.
    private func readToSync() throws {
        var failure: (any Error)?
        while true {
            guard let result = PQgetResult(handle) else {
                if PQstatus(handle) != CONNECTION_OK { throw connectionError }
                continue
            }
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC {
                PQclear(result)
                if let failure { throw failure }
                return
            }
            if status == PGRES_FATAL_ERROR, failure == nil {
                do { _ = try check(result) } catch { failure = error }
            } else {
                PQclear(result)
            }
        }
    }
}
