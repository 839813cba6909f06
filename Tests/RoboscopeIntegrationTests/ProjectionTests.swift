import Foundation
import Testing
import RoboscopeDomain
import RoboscopePostgres

/// Rebuild and verify, through the real binary, against a database of their own.
@Suite(.serialized) struct ProjectionTests {
    /// Every projection row, in a stable order, as text.
    static func snapshot(_ url: String) throws -> [String] {
        let connection = try TestDatabase.connect(url)
        var rows: [String] = []
        for table in ProjectionTables.all {
            let result = try connection.query("SELECT to_jsonb(t)::text FROM \(table.name) t ORDER BY \(table.key)")
            rows += (0..<result.rowCount).map { "\(table.name) \(result.string($0, 0)!)" }
        }
        return rows
    }

    /// Every index of the projection tables, as its definition.
    static func indexes(_ url: String) throws -> [String] {
        let connection = try TestDatabase.connect(url)
        let names = ProjectionTables.all.map { "'public.\($0.name)'::regclass" }.joined(separator: ", ")
        let result = try connection.query(
            "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid IN (\(names)) ORDER BY 1"
        )
        return (0..<result.rowCount).map { result.string($0, 0)! }
    }

    /// Creates, moves, recalculates, overrides and deletes, leaving a varied state behind.
    static func scriptedHistory(_ client: HTTPClient) async throws {
        let fixtures = Fixtures(client: client)
        for round in 0..<3 {
            let space = try await fixtures.space(["meta": ["round": .integer(Int64(round))]])
            let keep = try await fixtures.session(in: space)
            let drop = try await fixtures.session(in: space, ["session_type": "repair"])
            for index in 0..<4 {
                let marker = try await fixtures.marker(in: keep, ["label": .string("m\(index)")])
                let path = "/api/v1/markers/\(Fixtures.id(marker))"
                _ = try await client.patch(path, ["p1": [.number(Double(index)), 0.5, -1]])
                _ = try await client.put(path + "/details", ["custom_props": ["n": .integer(Int64(index))]])
                if index == 3 { _ = try await client.delete(path) }
                if index == 2 { _ = try await client.delete(path + "/details") }
            }
            _ = try await fixtures.marker(in: drop)
            _ = try await client.delete("/api/v1/work-sessions/\(Fixtures.id(drop))")
            let lockPath = "/api/v1/locks/\(Fixtures.id(keep))"
            let lock = try await client.post(lockPath, ["ttl_seconds": 60, "enforce": true]).json
            _ = try await client.post(lockPath + "/extend", ["token": lock["token"]!, "ttl_seconds": 120])
            if round != 2 { _ = try await client.send("DELETE", lockPath, json: ["token": lock["token"]!]) }
            _ = try await client.patch(
                "/api/v1/work-sessions/\(Fixtures.id(keep))", ["status": "done"],
                headers: ["X-Lock-Token": lock["token"]?.string ?? ""])
            if round == 1 { _ = try await client.delete("/api/v1/spaces/\(Fixtures.id(space))") }
        }
    }

    @Test func rebuildReproducesTheLiveTablesExactly() async throws {
        let url = try await TestDatabase.fresh("rebuild")
        let server = try await ServerProcess(databaseURL: url)
        try await Self.scriptedHistory(server.client)
        let before = try Self.snapshot(url)
        #expect(before.count > 10)
        let indexes = try Self.indexes(url)
        #expect(indexes.contains { $0.contains("markers_place_idx") })

        let rebuilt = try await CommandRunner.roboscope(["rebuild", "--database-url", url])
        #expect(rebuilt.status == 0, "\(rebuilt.output)")
        #expect(rebuilt.output.contains("rebuilt projections from"))
        #expect(try Self.snapshot(url) == before)
        // The fold drops the secondary indexes and builds them again: the same ones.
        #expect(try Self.indexes(url) == indexes)

        let verified = try await CommandRunner.roboscope(["verify", "--database-url", url])
        #expect(verified.status == 0, "\(verified.output)")
        #expect(verified.output.contains("projections match the log"))
        _ = await server.terminate()
    }

    @Test func verifyNamesEveryCorruptedRow() async throws {
        let url = try await TestDatabase.fresh("verify")
        let server = try await ServerProcess(databaseURL: url)
        try await Self.scriptedHistory(server.client)
        _ = await server.terminate()

        let connection = try TestDatabase.connect(url)
        let marker = try connection.query("SELECT id::text FROM markers ORDER BY id LIMIT 1").string(0, 0)!
        let details = try connection.query("SELECT marker_id::text FROM marker_details ORDER BY marker_id DESC LIMIT 1")
            .string(0, 0)!
        let stray = EntityID.random().description
        try connection.query("UPDATE markers SET label = 'tampered' WHERE id = $1", [marker])
        try connection.query("DELETE FROM marker_details WHERE marker_id = $1", [details])
        try connection.query(
            """
            INSERT INTO spaces (id, key, name, meta, active, version, created_at, updated_at, tenant)
            VALUES ($1, 'stray', 'stray', '{}', true, 1, now(), now(), 'default')
            """, [stray])

        let verified = try await CommandRunner.roboscope(["verify", "--database-url", url])
        #expect(verified.status == 1)
        #expect(verified.output.contains("markers \(marker): label: live \"tampered\""), "\(verified.output)")
        #expect(verified.output.contains("marker_details \(details): missing from the live table"))
        #expect(verified.output.contains("spaces \(stray): in the live table but not in the log"))
        #expect(verified.output.contains("3 difference(s)"))

        let repaired = try await CommandRunner.roboscope(["rebuild", "--database-url", url])
        #expect(repaired.status == 0)
        #expect(try await CommandRunner.roboscope(["verify", "--database-url", url]).status == 0)
    }
}
