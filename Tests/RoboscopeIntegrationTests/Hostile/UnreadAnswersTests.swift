import Foundation
import RoboscopeDomain
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Issue 45: 150 large answers nobody read took the server from 679 MiB to 2 GiB and
/// kept it there, some connections held after 100 s. An answer whose client takes none
/// of its bytes for `--send-timeout` is cut and its memory given back; past
/// `--response-memory` of unsent answers, a new large read is 503 `overloaded` while
/// small answers still go. Clients here read nothing, over real sockets with a small
/// receive window, so the answers wait in the server. One test at a time: each renders
/// 6.5 MB answers, which beside each other load the machine for the other suites.
@Suite(.serialized) struct UnreadAnswersTests {
    static let pending = "roboscope_http_answer_bytes_pending"

    /// A server, and the path of a list of 10,000 markers: 6.5 MB of answer, far more than
    /// the sockets' buffers take.
    static func serverWithALargeList(_ arguments: [String]) async throws -> (ServerProcess, String) {
        let databaseURL = try await TestDatabase.fresh("unread")
        let server = try await ServerProcess(databaseURL: databaseURL, extraArguments: arguments)
        let fixtures = Fixtures(client: server.client)
        let session = try await fixtures.session(in: try await fixtures.space())
        let marker = Fixtures.markerFields(in: session)
        for batch in 0..<10 {
            let items = (0..<1000).map { index -> JSONValue in
                .object(marker.merging(["label": .string("marker \(batch)-\(index) with a label long enough")]) { $1 })
            }
            #expect(try await server.client.post("/api/v1/markers/bulk", ["markers": .array(items)]).status == 201)
        }
        return (server, "/api/v1/markers?work_session_id=\(Fixtures.id(session))&limit=10000")
    }

    /// Sends a GET of `path` on a socket that will not read its answer (unless the test
    /// reads it); `closing`: the server closes the connection after it.
    static func unreadRequest(_ server: ServerProcess, _ path: String, closing: Bool = false) throws -> Int32 {
        let socket = try Loopback.connect(port: server.port, receiveBuffer: 4096)
        let head =
            "GET \(path) HTTP/1.1\r\nHost: localhost\r\nX-User-Id: hoarder\r\n"
            + (closing ? "Connection: close\r\n" : "") + "\r\n"
        let request = Array(head.utf8)
        guard write(socket, request, request.count) == request.count else { throw TestFailure("request not sent") }
        return socket
    }

    /// Reads from `socket` until the server closes it: for the first `slowly` quarter
    /// seconds at most `pace` bytes each (a client on a slow link), then as fast as it
    /// comes. Quarter seconds: a loaded machine stretches each pause, and a pause of a
    /// second stretched past the server's 2-s send timeout read as a stalled client.
    static func readToTheEnd(_ socket: Int32, slowly: Int, pace: Int) async throws -> Int {
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        for _ in 0..<slowly {
            var thisSecond = 0
            while thisSecond < pace {
                let count = recv(socket, &buffer, min(buffer.count, pace - thisSecond), 0)
                guard count > 0 else { return total }
                total += count
                thisSecond += count
            }
            // The slow client's pace, not a wait for a condition.
            try await Task.sleep(for: .milliseconds(250))
        }
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { return total }
            total += count
        }
    }

    @Test func anAnswerNobodyReadsIsCutAfterTheSendTimeoutAndItsMemoryGivenBack() async throws {
        let (server, path) = try await Self.serverWithALargeList(["--send-timeout", "2"])
        let answer = try await server.client.get(path)
        let whole = answer.body.count
        // Over a MiB: rendered as the socket drains, so sent without a length.
        #expect(answer.header("Content-Length") == nil)
        #expect(answer.json.array?.count == 10_000)
        let small = try await server.client.get(path.replacingOccurrences(of: "limit=10000", with: "limit=100"))
        #expect(small.header("Content-Length") != nil, "a small page is sent whole, with its length")

        // A slow reader, for twice the timeout, keeps taking bytes: it is never cut.
        let slow = try Self.unreadRequest(server, path, closing: true)
        let received = try await Self.readToTheEnd(slow, slowly: 16, pace: 128 << 10)
        close(slow)
        #expect(received > whole, "the whole answer and its head")
        #expect(try await server.metric("roboscope_http_answers_cut_total") == 0)

        let socket = try Self.unreadRequest(server, path)
        defer { close(socket) }
        try await eventually("the answer waits in the server", within: 20) { try await server.metric(Self.pending) > 0 }
        try await eventually("the answer is cut", within: 20) {
            try await server.metric("roboscope_http_answers_cut_total") == 1
        }
        try await eventually("its memory is given back", within: 10) { try await server.metric(Self.pending) == 0 }
        await server.terminate()
    }

    @Test func pastTheMemoryBudgetALargeReadIs503AndSmallReadsAreAnswered() async throws {
        let (server, path) = try await Self.serverWithALargeList(["--response-memory", "1", "--send-timeout", "120"])
        let space = try await Fixtures(client: server.client).space()
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        // Each streamed answer holds its first MiB, less what the socket took, until read.
        for _ in 0..<4 { sockets.append(try Self.unreadRequest(server, path)) }
        try await eventually("more than the budget waits unsent", within: 20) {
            try await server.metric(Self.pending) > 1 << 20
        }

        // Some of the hoarders may be refused too, before or meanwhile, once the first ones
        // filled the budget: the count grows by this refusal at least.
        let refusedBefore = try await server.metric("roboscope_http_answers_refused_total")
        let refused = try await server.client.get(path)
        #expect(refused.status == 503)
        #expect(refused.json["error"]?["code"] == "overloaded")
        #expect(refused.header("Retry-After") == "1")
        #expect(try await server.metric("roboscope_http_answers_refused_total") >= refusedBefore + 1)
        #expect(
            try await server.client.get("/api/v1/spaces/\(Fixtures.id(space))").status == 200,
            "a small answer is always sent")

        // The hoarder leaves: its answer's memory is given back, and large reads are served again.
        for socket in sockets { close(socket) }
        sockets = []
        try await eventually("nothing waits unsent", within: 20) { try await server.metric(Self.pending) == 0 }
        #expect(try await server.client.get(path).status == 200)
        await server.terminate()
    }
}
