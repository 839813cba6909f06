import Foundation
import Testing
import RoboscopeDomain

/// Postgres goes away under a running service and comes back.
@Suite(.serialized) struct DatabaseOutageTests {
    @Test func outageGives503ThenRecoversWithoutARestart() async throws {
        let (url, proxy) = try await TCPProxy.freshDatabase("outage")
        let server = try await ServerProcess(databaseURL: url)
        let client = server.client
        let fixtures = Fixtures(client: client)
        let space = try await fixtures.space()

        proxy.stop()
        for attempt in 0..<3 {
            let started = Date()
            let read = try await client.get("/api/v1/spaces/\(Fixtures.id(space))")
            #expect(read.status == 503, "attempt \(attempt)")
            #expect(read.header("Retry-After") == "1")
            #expect(read.json["error"]?["code"] == "service_unavailable")
            #expect(Date().timeIntervalSince(started) < 10, "fails fast, not after the 60 s request timeout")
        }
        let write = try await client.post("/api/v1/spaces", ["key": .string(Fixtures.uniqueKey()), "name": "n"])
        #expect(write.status == 503)
        // The changes feed streams its rows from the connection's thread: a read the pool
        // refuses must end the page too (it used to wait for rows forever).
        let started = Date()
        let changes = try await client.get("/api/v1/changes?topic=space:\(Fixtures.id(space))&since=0")
        #expect(changes.status == 503)
        #expect(Date().timeIntervalSince(started) < 10, "fails fast, not after the 60 s request timeout")
        #expect(try await client.get("/readyz").status == 503)
        #expect(try await client.get("/healthz").status == 200)
        // The outage shows in the pool's metrics.
        let metrics = String(decoding: try await client.get("/metrics").body, as: UTF8.self)
        #expect(MetricsTests.value(metrics, "roboscope_pool_connect_failures_total", labels: #"pool="postgres""#) >= 1)
        let dropped = MetricsTests.value(
            metrics, "roboscope_pool_connections_dropped_total", labels: #"pool="postgres""#)
        let refused = MetricsTests.value(metrics, "roboscope_pool_jobs_refused_total", labels: #"pool="postgres""#)
        #expect(dropped + refused >= 1)

        try proxy.start()
        var recovered = false
        for _ in 0..<50 where !recovered {
            recovered = try await client.get("/readyz").status == 200
            if !recovered { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(recovered)
        #expect(try await client.get("/api/v1/spaces/\(Fixtures.id(space))").status == 200)
        _ = try await fixtures.space()
        #expect(await server.terminate() == 0)
        proxy.stop()
    }

    @Test func sigtermStopsCleanly() async throws {
        let server = try await ServerProcess(databaseURL: try await TestDatabase.fresh("sigterm"))
        _ = try await Fixtures(client: server.client).space()
        #expect(await server.terminate() == 0)
    }
}
