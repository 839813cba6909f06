import Foundation
import Testing
import RoboscopeDomain

/// `roboscope replay` rebuilds state from the log alone: at the end of a history it
/// equals what the live API serves, and at an earlier position what it served then.
@Suite(.serialized) struct ReplayTests {
    @Test func replayAtTheEndEqualsTheLiveStateAndEarlierTheStateThen() async throws {
        let (server, url) = try await AuditTests.server.get()
        let client = server.client
        let fixtures = Fixtures(client: client)
        let (space, session) = try await fixtures.spaceAndSession()
        let first = try await fixtures.marker(in: session, ["label": "one"])
        let second = try await fixtures.marker(in: session, ["label": "two"])
        // The first marker's details event closes its create (other suites append meanwhile).
        let earlier =
            try await client.get("/api/v1/audit?entity_type=marker_details&entity_id=\(Fixtures.id(first))")
            .json["data"]?[0]?["position"]?.int ?? 0
        _ = try await client.patch("/api/v1/markers/\(Fixtures.id(first))", ["label": "one, moved", "p4": [0, 0, 5]])
        _ = try await client.put("/api/v1/markers/\(Fixtures.id(second))/details", ["custom_props": ["ok": true]])
        let sessionID = Fixtures.id(session)

        let replayed = try await CommandRunner.roboscope([
            "replay", "--database-url", url, "--until", "2100-01-01T00:00:00Z",
            "--work-session", sessionID,
        ])
        #expect(replayed.status == 0, "\(replayed.output)")
        let state = try JSONParser.parse(Array(replayed.output.utf8))
        let entry = state["work_sessions"]?[0]
        #expect(entry?["work_session"] == (try await client.get("/api/v1/work-sessions/\(sessionID)").json))
        #expect(entry?["markers"] == (try await client.get("/api/v1/markers?work_session_id=\(sessionID)").json))

        let then = try await CommandRunner.roboscope([
            "replay", "--database-url", url, "--until", String(earlier),
            "--space", Fixtures.id(space),
        ])
        let spaces = try JSONParser.parse(Array(then.output.utf8))["spaces"]
        #expect(spaces?[0]?["space"] == space)
        #expect(spaces?[0]?["work_sessions"]?[0]?["markers"] == [first])

        let table = try await CommandRunner.roboscope([
            "replay", "--database-url", url, "--until", "2100-01-01T00:00:00Z",
            "--work-session", sessionID, "--format", "table",
        ])
        #expect(table.output.contains("marker \(Fixtures.id(first))  one, moved  v2"), "\(table.output)")

        // By tenant: the space is the default tenant's (no authentication), and no one else's.
        let ours = try await CommandRunner.roboscope([
            "replay", "--database-url", url, "--until", "2100-01-01T00:00:00Z",
            "--tenant", "default", "--format", "table",
        ])
        #expect(
            ours.output.contains(
                "space \(Fixtures.id(space))  \(space["key"]!.string!)  Test space  tenant default  v1"),
            "\(ours.output)")
        let theirs = try await CommandRunner.roboscope([
            "replay", "--database-url", url, "--until", "2100-01-01T00:00:00Z",
            "--tenant", "globex",
        ])
        #expect(try JSONParser.parse(Array(theirs.output.utf8))["spaces"] == [])

        let missing = try await CommandRunner.roboscope([
            "replay", "--database-url", url, "--until", "0", "--work-session", sessionID,
        ])
        #expect(missing.status == 1)
        #expect(missing.output.contains("did not exist yet"))
        #expect(try await CommandRunner.roboscope(["replay", "--database-url", url, "--until", "soon"]).status != 0)
    }
}
