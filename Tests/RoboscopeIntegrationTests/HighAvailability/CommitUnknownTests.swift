import Foundation
import RoboscopeDomain
import Testing

/// A commit waits for the synchronous standby before it is answered (DESIGN, "Nothing
/// acknowledged is lost"). When that wait is cancelled, Postgres reports success with a
/// warning, though the standby may never get the transaction and a failover would lose
/// it; when the backend is terminated, the connection breaks before the answer. Either
/// way the write's outcome is unknown: never 2xx, but 503 `commit_unknown`, and the
/// retry with the same key stores it exactly once.
///
/// A standby that never answers is made by naming one that does not exist in
/// `synchronous_standby_names`, on a server of this suite's own.
@Suite struct CommitUnknownTests {
    @Test func aCancelledSynchronousWaitIsCommitUnknownAndTheRetryStoresOnce() async throws {
        try await Self.interruptedCreate(by: "pg_cancel_backend")
    }

    @Test func aTerminatedBackendDuringTheWaitIsCommitUnknownAndTheRetryStoresOnce() async throws {
        try await Self.interruptedCreate(by: "pg_terminate_backend")
    }

    /// Creates a space under a key while commits wait for an absent standby, interrupts
    /// the waiting backend with `function`, then brings commits back and retries.
    static func interruptedCreate(by function: String) async throws {
        BrokenPipes.ignored
        let postgres = try await PrivatePostgres.start()
        defer { postgres.stop() }
        let url = postgres.url(of: "roboscope")
        let server = try await ServerProcess(databaseURL: url)
        defer { server.stopWithoutWaiting() }
        try postgres.set("synchronous_standby_names", to: "absent_standby")

        let key = UUID().uuidString
        let spaceKey = Fixtures.uniqueKey()
        let body: JSONValue = ["key": .string(spaceKey), "name": "waits for a standby"]
        let client = server.client
        let create = { @Sendable in try await client.post("/api/v1/spaces", body, headers: ["Idempotency-Key": key]) }
        let answer = try await Self.interrupted(create, by: function, on: postgres)
        #expect(answer.status == 503, "an interrupted commit is never acknowledged: \(answer.status) \(answer.json)")
        #expect(answer.json["error"]?["code"]?.string == "commit_unknown", "\(answer.json)")
        #expect(answer.header("Retry-After") == "1")
        // Committed on this node, though not on a standby: the retry must find it, not write it again.
        #expect(try scalar(url, "SELECT count(*) FROM spaces WHERE key = $1", [spaceKey]) == 1)

        // A retry while the standby is still away finds the stored answer, but must not
        // acknowledge it before the standby has it: it waits, and is cancelled in turn.
        let early = try await Self.interrupted(create, by: "pg_cancel_backend", on: postgres)
        #expect(early.status == 503, "\(early.json)")
        #expect(early.json["error"]?["code"]?.string == "commit_unknown", "\(early.json)")

        try postgres.set("synchronous_standby_names", to: nil)
        let retry = try await client.post("/api/v1/spaces", body, headers: ["Idempotency-Key": key])
        #expect(retry.status == 201, "\(retry.json)")
        #expect(retry.json["key"]?.string == spaceKey)
        #expect(try scalar(url, "SELECT count(*) FROM spaces WHERE key = $1", [spaceKey]) == 1)
        #expect(
            try scalar(
                url, "SELECT count(*) FROM eventlog.events WHERE type = 'space.created' AND data->>'key' = $1",
                [spaceKey]) == 1)
        #expect(await server.terminate() == 0)
    }

    /// Sends `request`, waits until its commit waits for the synchronous standby, then
    /// interrupts that backend with `function` (`pg_cancel_backend`, `pg_terminate_backend`).
    static func interrupted(
        _ request: @escaping @Sendable () async throws -> HTTPClient.Reply, by function: String,
        on postgres: PrivatePostgres
    ) async throws -> HTTPClient.Reply {
        let sent = Task { try await request() }
        let admin = postgres.url(of: "postgres")
        // The checkpointer's commits wait too (its own connection, named): not the request's.
        let waiting =
            "FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND application_name <> 'roboscope-checkpointer'"
        try await eventually("the write waits for the synchronous standby", within: 30) {
            try scalar(admin, "SELECT count(*) \(waiting)") == 1
        }
        _ = try scalar(admin, "SELECT count(\(function)(pid)) \(waiting)")
        return try await sent.value
    }
}
