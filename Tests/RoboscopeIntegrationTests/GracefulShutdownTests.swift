import Foundation
import Testing
import RoboscopePostgres
import RoboscopeDomain

/// SIGTERM while writers are busy: the process drains and exits 0, and every write it
/// acknowledged with 201 is in the database afterwards.
@Suite(.serialized) struct GracefulShutdownTests {
    actor Outcomes {
        var acknowledged: [String] = []
        var statuses: [Int: Int] = [:]
        var transportErrors: [String] = []

        func record(_ reply: HTTPClient.Reply) {
            statuses[reply.status, default: 0] += 1
            if reply.status == 201, let id = reply.json["id"]?.string { acknowledged.append(id) }
        }

        func recordTransportError(_ error: any Error) { transportErrors.append("\(error)") }
    }

    @Test func sigtermUnderLoadLosesNoAcknowledgedWrite() async throws {
        let url = try await TestDatabase.fresh("drain")
        let server = try await ServerProcess(databaseURL: url)
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let outcomes = Outcomes()
        let body = Fixtures.markerFields(in: session)
        let marker = JSONValue.object(body)

        let writers = (0..<16).map { _ in
            Task {
                // Each writer keeps going until the server stops answering.
                while true {
                    do {
                        await outcomes.record(try await server.client.post("/api/v1/markers", marker))
                    } catch {
                        await outcomes.recordTransportError(error)
                        return
                    }
                }
            }
        }
        // A generous bound: it is how long a loaded CI machine may take, not a delay.
        try await eventually("the writers are well under way", within: 60) {
            let errors = await outcomes.transportErrors
            if errors.count == 16 { throw TestFailure("every writer stopped before SIGTERM: \(errors.prefix(3))") }
            return await outcomes.acknowledged.count >= 20
        }
        let acknowledgedBeforeSignal = await outcomes.acknowledged.count
        kill(server.process.processIdentifier, SIGTERM)
        for writer in writers { await writer.value }
        _ = await server.process.exitStatus()

        #expect(server.process.terminationStatus == 0, "\(server.log().suffix(2000))")
        #expect(acknowledgedBeforeSignal > 0)
        let statuses = await outcomes.statuses
        #expect(statuses.keys.allSatisfy { $0 == 201 }, "\(statuses)")
        let acknowledged = await outcomes.acknowledged
        let connection = try TestDatabase.connect(url)
        let ids = "{" + acknowledged.joined(separator: ",") + "}"
        let stored = try connection.query("SELECT count(*) FROM markers WHERE id = ANY($1::uuid[])", [ids]).int64(0, 0)
        #expect(stored == Int64(acknowledged.count), "acknowledged \(acknowledged.count), stored \(stored ?? -1)")
        let events = try connection.query(
            "SELECT count(*) FROM eventlog.events WHERE type = 'marker.created' AND stream_id = ANY($1::uuid[])", [ids]
        ).int64(0, 0)
        #expect(events == Int64(acknowledged.count))
    }
}
