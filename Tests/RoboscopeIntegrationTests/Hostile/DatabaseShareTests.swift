import Foundation
import Testing

/// Issue 45: every tenant shared one pool, reports included, so one tenant's slow reads
/// made every other tenant's small read wait. A tenant's requests hold at most its share
/// of the request pool (the rest of its work waits in its own line), and reports run on
/// a pool of their own. A table lock held by the test makes "slow" certain.
@Suite struct DatabaseShareTests {
    static let markersStatement = "FROM markers"

    /// A space of `tenant` with one work session: (space id, session id).
    static func place(_ server: ServerProcess, tenant: String) async throws -> (String, String) {
        let admin = Tokens.bearer(try Tokens.token(tenant, "admin"))
        let space = try await server.client.post(
            "/api/v1/spaces", ["key": .string(Fixtures.uniqueKey()), "name": "s"],
            headers: admin)
        let session = try await server.client.post(
            "/api/v1/work-sessions",
            ["space_id": space.json["id"]!, "session_type": "repair"],
            headers: admin)
        return (space.json["id"]!.string!, session.json["id"]!.string!)
    }

    @Test func oneTenantsStuckReadsLeaveTheOtherTenantItsShareOfThePool() async throws {
        let databaseURL = try await TestDatabase.fresh("db_share")
        let server = try await ServerProcess(
            databaseURL: databaseURL,
            extraArguments: Tokens.serverArguments()
                + [
                    "--db-pool-size", "2", "--tenant-db-share", "0.5", "--db-statement-timeout", "60",
                    // The database's share alone: the lists here are heavy requests too.
                    "--tenant-heavy-requests", "100",
                ]
        )
        let (_, acmeSession) = try await Self.place(server, tenant: "acme")
        let (globexSpace, _) = try await Self.place(server, tenant: "globex")
        let globex = Tokens.bearer(try Tokens.token("globex", "read"))
        #expect(try await server.client.send("GET", "/api/v1/spaces/\(globexSpace)", headers: globex).status == 200)

        let lock = try await QueryBoundsTests.TableLock(databaseURL, table: "public.markers")
        let acme = Tokens.bearer(try Tokens.token("acme", "read"))
        let client = server.client
        let stuck = (0..<3).map { _ in
            Task { try await client.send("GET", "/api/v1/markers?work_session_id=\(acmeSession)", headers: acme) }
        }
        try await eventually("one of acme's reads runs, two wait in acme's line", within: 20) {
            try await server.metric("roboscope_pool_jobs_waiting{pool=\"postgres\"}") == 2
        }
        // The running read is taken off the pool's queue before its statement reaches the
        // lock: a clean-clone run asked in between and found none waiting yet.
        try await eventually("acme's running read waits on the table's lock", within: 20) {
            try await QueryBoundsTests.waitingOnLocks(databaseURL, in: Self.markersStatement) >= 1
        }
        #expect(
            try await QueryBoundsTests.waitingOnLocks(databaseURL, in: Self.markersStatement) == 1,
            "acme holds one connection of two, its share")

        // Answered on the connection acme may not take, long before acme's 60-s timeout.
        let started = ContinuousClock.now
        let small = try await client.send("GET", "/api/v1/spaces/\(globexSpace)", headers: globex)
        #expect(small.status == 200)
        #expect(ContinuousClock.now - started < .seconds(10))

        try await lock.release()
        for read in stuck { #expect(try await read.value.status == 200, "acme's reads were queued, not refused") }
        await server.terminate()
    }

    /// The fairshare benchmark: one tenant's heavy requests took the CPU another's small
    /// ones needed. Past `--tenant-heavy-requests`, a tenant's heavy request waits for its
    /// turn; another tenant's starts at once.
    @Test func aTenantsHeavyRequestsPastItsShareWaitTheirTurn() async throws {
        let databaseURL = try await TestDatabase.fresh("heavy_share")
        let server = try await ServerProcess(
            databaseURL: databaseURL,
            extraArguments: Tokens.serverArguments() + ["--tenant-heavy-requests", "1", "--db-statement-timeout", "60"]
        )
        let (_, acmeSession) = try await Self.place(server, tenant: "acme")
        let (_, globexSession) = try await Self.place(server, tenant: "globex")
        let acme = Tokens.bearer(try Tokens.token("acme", "read"))
        let globex = Tokens.bearer(try Tokens.token("globex", "read"))
        let client = server.client
        // Authorized once, so that the places are known before the lock.
        let acmeList = "/api/v1/markers?work_session_id=\(acmeSession)"
        let globexList = "/api/v1/markers?work_session_id=\(globexSession)"
        #expect(try await client.send("GET", acmeList + "&limit=1", headers: acme).status == 200)
        #expect(try await client.send("GET", globexList + "&limit=1", headers: globex).status == 200)

        let lock = try await QueryBoundsTests.TableLock(databaseURL, table: "public.markers")
        let heavy = (0..<2).map { _ in
            Task { try await client.send("GET", acmeList, headers: acme) }
        }
        try await eventually("one of acme's lists runs, the other waits its turn", within: 20) {
            try await server.metric("roboscope_heavy_requests_waiting") == 1
        }
        let other = Task { try await client.send("GET", globexList, headers: globex) }
        try await eventually("globex's list runs beside acme's", within: 20) {
            try await QueryBoundsTests.waitingOnLocks(databaseURL, in: Self.markersStatement) == 2
        }
        #expect(try await server.metric("roboscope_heavy_requests_waiting") == 1)
        try await lock.release()
        for list in heavy { #expect(try await list.value.status == 200) }
        #expect(try await other.value.status == 200)
        await server.terminate()
    }

    @Test func aStuckReportLeavesTheRequestPoolFree() async throws {
        let databaseURL = try await TestDatabase.fresh("report_pool")
        let server = try await ServerProcess(
            databaseURL: databaseURL,
            extraArguments: ["--db-pool-size", "1", "--report-pool-size", "1", "--report-timeout", "60"]
        )
        let fixtures = Fixtures(client: server.client)
        _ = try await fixtures.space()
        // The list reads only the spaces' table (a space's own page reads its topic's head).
        #expect(try await server.client.get("/api/v1/spaces?limit=10").status == 200)

        let lock = try await QueryBoundsTests.TableLock(databaseURL, table: "eventlog.events")
        let client = server.client
        let reports = (0..<2).map { _ in Task { try await client.get("/api/v1/audit?limit=10") } }
        // Both, waited for: the second report queues for the pool as soon as the first
        // holds its connection, which may be before the first's statement reaches the lock.
        try await eventually("a report waits on the lock and another for the report pool", within: 20) {
            let queued = try await server.metric("roboscope_pool_jobs_waiting{pool=\"postgres_reports\"}")
            let locked = try await QueryBoundsTests.waitingOnLocks(databaseURL, in: QueryBoundsTests.auditStatement)
            return queued == 1 && locked == 1
        }

        let started = ContinuousClock.now
        #expect(try await client.get("/api/v1/spaces?limit=10").status == 200, "the request pool is not the reports'")
        #expect(ContinuousClock.now - started < .seconds(10))

        try await lock.release()
        for report in reports { #expect(try await report.value.status == 200) }
        await server.terminate()
    }
}
