import Foundation
import Synchronization
import Testing
import RoboscopeDomain

/// The changes feed reads the page after the one it sent while the client takes that in
/// (`--changes-read-ahead`). A page answered from memory must be exactly what a read
/// would answer then. One test at a time: each watches the server's counters.
@Suite(.serialized) struct ChangesReadAheadTests {
    static let server = LazyServer("changes_read_ahead")

    @Test func aCatchUpFromPagesReadAheadListsTheTopicExactlyWhileWritersAppend() async throws {
        let (server, _) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let topic = "work_session:\(Fixtures.id(session))"
        for _ in 0..<20 { _ = try await fixtures.marker(in: session) }
        let hitsBefore = try await server.metric("roboscope_changes_read_ahead_hits_total")

        // A writer keeps appending to the topic while a client pages through it.
        let client = server.client
        let writing = Flag()
        let writer = Task {
            defer { writing.lower() }
            let fixtures = Fixtures(client: client)
            for _ in 0..<20 { _ = try await fixtures.marker(in: session) }
        }
        var messages: [JSONValue] = []
        var since: Int64 = 0
        while true {
            // A page that finds nothing new waits (`wait`) for the writer's next event.
            let stillWriting = writing.isRaised
            let page = try await server.client.get(
                "/api/v1/changes?topic=\(topic)&since=\(since)&limit=7" + (stillWriting ? "&wait=5" : "")
            )
            #expect(page.status == 200)
            let data = page.json["data"]?.array ?? []
            messages += data
            since = page.json["next_since"]?.int ?? since
            if page.json["has_more"] == true {
                #expect(data.count == 7)
            } else if !stillWriting {
                break
            }
        }
        try await writer.value

        // Every event once, in order, numbered without a gap: the same as one fresh read.
        let fresh = try await TopicOrderTests.feed(server.client, topic, since: 0)
        #expect(messages == fresh)
        #expect(messages.compactMap { $0["topic_seq"]?.int } == Array(1...Int64(fresh.count)))
        #expect(fresh.count == 1 + 40 * 2)
        #expect(
            try await server.metric("roboscope_changes_read_ahead_hits_total") > hitsBefore,
            "some pages came from reading ahead")
    }

    @Test func aPageThatEndedTheTopicIsReadAgain() async throws {
        let (server, _) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let topic = "work_session:\(Fixtures.id(session))"
        _ = try await fixtures.marker(in: session)  // the topic: the session, a marker, its details

        let series = #"roboscope_changes_read_ahead_reads_total{outcome="not_kept"}"#
        let notKept = try await server.metric(series)
        let first = try await server.client.get("/api/v1/changes?topic=\(topic)&since=0&limit=2")
        #expect(first.json["has_more"] == true)
        let since = first.json["next_since"]!.int!
        // The page after it (one event, the end of the topic) is read ahead, and not kept.
        try await eventually("the next page has been read ahead") {
            try await server.metric(series) > notKept
        }
        let marker = try await fixtures.marker(in: session)
        let second = try await server.client.get("/api/v1/changes?topic=\(topic)&since=\(since)&limit=2")
        #expect(second.json["data"]?.count == 2)
        #expect(second.json["data"]?[1]?["stream_id"] == marker["id"])
        #expect(second.json["has_more"] == true)
    }

    @Test func aServerReadsNothingAheadWhenToldNot() async throws {
        let url = try await TestDatabase.fresh("changes_no_read_ahead")
        let server = try await ServerProcess(databaseURL: url, extraArguments: ["--changes-read-ahead", "0"])
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let topic = "work_session:\(Fixtures.id(session))"
        for _ in 0..<3 { _ = try await fixtures.marker(in: session) }
        let all = try await TopicOrderTests.feed(server.client, topic, since: 0)
        #expect(try await TopicOrderTests.feed(server.client, topic, since: 0, limit: 2) == all)
        for outcome in ["kept", "not_kept"] {
            let series = #"roboscope_changes_read_ahead_reads_total{outcome=""# + outcome + #""}"#
            #expect(try await server.metric(series) == 0, "no page was read ahead")
        }
        let invalid = try await CommandRunner.roboscope(["serve", "--changes-read-ahead", "-1", "--database-url", url])
        #expect(invalid.status != 0)
        #expect(invalid.output.contains("--changes-read-ahead"))
    }
}

/// Raised until the writer is done.
private final class Flag: Sendable {
    private let raised = Mutex(true)
    var isRaised: Bool { raised.withLock { $0 } }
    func lower() { raised.withLock { $0 = false } }
}
