import Foundation
import Testing
import RoboscopeDomain

/// Snapshots that join the stream: a topic-scoped read names the position its topic's
/// events continue from, consistent while writers run.
@Suite struct SnapshotJoinTests {
    static let server = LazyServer("snapshot")

    @Test func aSnapshotPlusTheChangesAfterItFoldsToTheFinalList() async throws {
        let (server, _) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let sessionID = Fixtures.id(session)
        let topic = "work_session:\(sessionID)"
        let client = server.client

        // Writers create, move and delete markers while snapshots are taken.
        let writers = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<6 {
                    group.addTask {
                        for step in 0..<10 {
                            var body = Fixtures.quad
                            body["work_session_id"] = .string(sessionID)
                            let created = try await client.post("/api/v1/markers", .object(body))
                            let path = "/api/v1/markers/\(Fixtures.id(created.json))"
                            _ = try await client.patch(
                                path, ["p2": [.integer(Int64(writer)), 0, .integer(Int64(step))]])
                            if step % 3 == 0 { _ = try await client.delete(path) }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        var snapshots: [(markers: [JSONValue], position: Int64, sequence: Int64)] = []
        while snapshots.count < 8 {
            let list = try await client.get("/api/v1/markers?work_session_id=\(sessionID)")
            let position = Int64(list.header("Roboscope-Position") ?? "") ?? -1
            let sequence = Int64(list.header("Roboscope-Topic-Seq") ?? "") ?? -1
            snapshots.append((list.json.array ?? [], position, sequence))
        }
        try await writers.value
        let final = try await client.get("/api/v1/markers?work_session_id=\(sessionID)").json.array ?? []

        for snapshot in snapshots {
            #expect(snapshot.position > 0 && snapshot.sequence > 0)
            let changes = try await TopicOrderTests.feed(client, topic, since: snapshot.position)
            if let first = changes.first {
                #expect(first["topic_seq"]?.int == snapshot.sequence + 1, "the feed continues right after the snapshot")
            }
            var markers: [String: JSONValue] = [:]
            for marker in snapshot.markers { markers[marker["id"]!.string!] = marker }
            for change in changes {
                let id = change["stream_id"]!.string!
                switch change["type"]?.string {
                case "marker.created", "marker.updated": markers[id] = change["data"]
                case "marker.deleted": markers[id] = nil
                case "marker_details.calculated", "marker_details.updated":
                    if var marker = markers[id]?.objectValue {
                        marker["details"] = change["data"]; markers[id] = .object(marker)
                    }
                case "marker_details.deleted":
                    if var marker = markers[id]?.objectValue {
                        marker["details"] = .null; markers[id] = .object(marker)
                    }
                default: break
                }
            }
            let folded = markers.values.sorted { $0["id"]!.string! < $1["id"]!.string! }
            let expected = final.sorted { $0["id"]!.string! < $1["id"]!.string! }
            #expect(folded == expected, "snapshot at \(snapshot.position) plus its changes")
        }
    }

    @Test func everyTopicScopedReadNamesItsHead() async throws {
        let (server, _) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        let (space, session) = try await fixtures.spaceAndSession()
        let marker = try await fixtures.marker(in: session)
        let spaceID = Fixtures.id(space)
        let sessionID = Fixtures.id(session)
        let markerID = Fixtures.id(marker)
        let sessionHead = try await TopicOrderTests.feed(server.client, "work_session:\(sessionID)", since: 0).last!
        let spaceHead = try await TopicOrderTests.feed(server.client, "space:\(spaceID)", since: 0).last!
        let reads: [(String, JSONValue)] = [
            ("/api/v1/work-sessions/\(sessionID)", sessionHead),
            ("/api/v1/markers?work_session_id=\(sessionID)", sessionHead),
            ("/api/v1/markers/\(markerID)", sessionHead),
            ("/api/v1/markers/\(markerID)/details", sessionHead),
            ("/api/v1/spaces/\(spaceID)", spaceHead),
            ("/api/v1/work-sessions?space_id=\(spaceID)", spaceHead),
        ]
        for (path, head) in reads {
            let reply = try await server.client.get(path)
            #expect(reply.status == 200)
            #expect(reply.header("Roboscope-Position") == head["position"]?.int.map(String.init), "\(path)")
            #expect(reply.header("Roboscope-Topic-Seq") == head["topic_seq"]?.int.map(String.init), "\(path)")
        }
        // Lists that are no topic's carry no head.
        #expect(try await server.client.get("/api/v1/markers?space_id=\(spaceID)").header("Roboscope-Position") == nil)
        #expect(try await server.client.get("/api/v1/spaces").header("Roboscope-Position") == nil)
    }
}
