import Foundation
import Testing

/// A primary that becomes a standby under the service (Patroni demoting it after a
/// partition, or the first host of a multi-host URL after a failover) refuses writes
/// with SQLSTATE 25006. Made here by making the database read-only for new sessions.
@Suite struct ReadOnlyPrimaryTests {
    @Test func aReadOnlyServerGives503AndItsConnectionsAreReplacedOnceItTakesWritesAgain() async throws {
        let url = try await TestDatabase.fresh("readonly")
        let database = String(url.split(separator: "/").last!.split(separator: "?").first!)
        let server = try await ServerProcess(databaseURL: url)
        let client = server.client
        let fixtures = Fixtures(client: client)
        _ = try await fixtures.space()

        // Every session from here on is read-only, the pool's own among them.
        let admin = try TestDatabase.connect(TestDatabase.url(of: "postgres"))
        try admin.execute("ALTER DATABASE \(database) SET default_transaction_read_only = on")
        try admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)'")
        // The first writes may meet the terminated connections (503, unreachable); then
        // the pool's new sessions refuse them as read-only.
        var answer: (status: Int, message: String, retryAfter: String?)?
        try await eventually("an answer other than the terminated connections' 503", within: 30) {
            let write = try await client.post("/api/v1/spaces", ["key": .string(Fixtures.uniqueKey()), "name": "n"])
            let message = write.json["error"]?["message"]?.string ?? ""
            guard write.status != 503 || message.contains("read-only") else { return false }
            answer = (write.status, message, write.header("Retry-After"))
            return true
        }
        #expect(
            answer?.status == 503,
            "a read-only server is a failover under way, not a server error: \(String(describing: answer))")
        #expect(answer?.retryAfter != nil)

        // Writable again (the new primary): the read-only sessions stay read-only for as
        // long as they live, so writes succeed again only if the pool replaced them.
        try admin.execute("ALTER DATABASE \(database) RESET default_transaction_read_only")
        try await eventually("writes succeed again without a restart", within: 10) {
            try await client.post("/api/v1/spaces", ["key": .string(Fixtures.uniqueKey()), "name": "n"]).status == 201
        }
        #expect(await server.terminate() == 0)
    }
}
