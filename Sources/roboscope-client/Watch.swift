import ArgumentParser
import Foundation
import RoboscopeKit
import Synchronization

/// `roboscope-client watch`: prints every event of a topic as one JSON line (the message
/// as received), in order, each once, forever; reconnects with backoff and resumes with
/// `since`; with `--state`, keeps its cursor on disk and resumes from it after a restart.
/// With `--presence`, also who is present whenever that changes. A refused token (401,
/// close 4001 or 4003) is said on standard error; after `--max-auth-failures` in a row
/// without the topic going live in between, it gives up with exit 3.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print every event of a topic as one JSON line, forever.")

    @OptionGroup var connection: Connection

    @Option(name: .customLong("ws-url"), help: "The gateway's URL (default: what GET /api/v1/realtime names).")
    var webSocketURL: String?

    @Option(name: .customLong("topic"), help: "work_session:<uuid> or space:<uuid>.")
    var topic: String

    @Option(
        name: .customLong("since"),
        help: "The last position already processed (0: from the beginning; default: from now).")
    var since: Int64?

    @Option(name: .customLong("state"), help: "A folder to keep the cursor in across restarts.")
    var state: String?

    @Flag(
        name: .customLong("presence"),
        help: "Also print who is present, as {\"op\": \"presence\", ...}, whenever it changes.")
    var presence = false

    @Option(name: .customLong("max-auth-failures"), help: "Refused tokens in a row before giving up with exit 3.")
    var maxAuthFailures = 3

    func validate() throws {
        guard Topic(topic) != nil else { throw ValidationError("--topic must be work_session:<uuid> or space:<uuid>") }
        if let webSocketURL, URL(string: webSocketURL)?.scheme.map({ ["ws", "wss"].contains($0) }) != true {
            throw ValidationError("--ws-url must be a ws:// or wss:// URL")
        }
        if let since, since < 0 { throw ValidationError("--since must be 0 or more") }
        guard maxAuthFailures >= 1 else { throw ValidationError("--max-auth-failures must be at least 1") }
    }

    func run() async throws {
        defer { LoggedHTTPTransport.flush() }
        let topic = Topic(topic)!
        let client = connection.client(webSocketURL: webSocketURL.flatMap(URL.init(string:)))
        let cursorFile = try state.map { folder -> URL in
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            return URL(fileURLWithPath: folder).appendingPathComponent(
                "watch-\(topic.description.replacingOccurrences(of: ":", with: "-")).json")
        }
        var cursor = TopicCursor()
        if let since { cursor = TopicCursor(position: since, topicSeq: since == 0 ? 0 : nil) }
        if let cursorFile, let data = try? Data(contentsOf: cursorFile) {
            cursor = try JSONDecoder().decode(TopicCursor.self, from: data)
        }
        let start = cursor
        let live = client.follow(topic, from: start)
        let refusedInARow = RefusalCount(limit: maxAuthFailures)
        let printsPresence = presence
        _ = try await untilSignalled {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await event in live.events {
                        Output.line(event.raw)
                        if let cursorFile {
                            // Written after the line is out: a restart may print the last line again
                            // at worst, never skip one. `.atomic` replaces the file in one rename.
                            try JSONEncoder().encode(TopicCursor(position: event.position, topicSeq: event.topicSeq))
                                .write(to: cursorFile, options: .atomic)
                        }
                    }
                }
                group.addTask {
                    for await state in live.states where state == .live { refusedInARow.reset() }
                }
                group.addTask {
                    for await refusal in live.refusals {
                        Diagnostics.line("the server refused the token: \(refusal)")
                        if refusedInARow.add() { throw ExitCode(3) }
                    }
                }
                if printsPresence {
                    group.addTask {
                        for await users in live.presence {
                            Output.json([
                                "op": .string(WireOp.presence.rawValue), "topic": .string(topic.description),
                                "users": .array(users.map(JSONValue.string)),
                            ])
                        }
                    }
                }
                // The first to end (the events, or a give-up) ends the rest.
                try await group.next()
                group.cancelAll()
            }
        }
    }
}

/// Refused tokens since the topic was last live.
final class RefusalCount: Sendable {
    let limit: Int
    private let count = Mutex(0)

    init(limit: Int) {
        self.limit = limit
    }

    func reset() { count.withLock { $0 = 0 } }

    /// One more; true once `limit` are reached.
    func add() -> Bool {
        count.withLock { count in
            count += 1
            return count >= limit
        }
    }
}
