import ArgumentParser
import Foundation
import RoboscopeKit

/// `roboscope-client watch`: prints every event of a topic as one JSON line (the message
/// as received), in order, each once, forever; reconnects with backoff and resumes with
/// `since`; with `--state`, keeps its cursor on disk and resumes from it after a restart.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print every event of a topic as one JSON line, forever.")

    @OptionGroup var connection: Connection

    @Option(name: .customLong("ws-url"), help: "The gateway's URL (default: what GET /api/v1/realtime names).")
    var webSocketURL: String?

    @Option(name: .customLong("topic"), help: "work_session:<uuid> or space:<uuid>.")
    var topic: String

    @Option(name: .customLong("since"), help: "The last position already processed (0: from the beginning; default: from now).")
    var since: Int64?

    @Option(name: .customLong("state"), help: "A folder to keep the cursor in across restarts.")
    var state: String?

    func validate() throws {
        guard Topic(topic) != nil else { throw ValidationError("--topic must be work_session:<uuid> or space:<uuid>") }
        if let webSocketURL, URL(string: webSocketURL)?.scheme.map({ ["ws", "wss"].contains($0) }) != true {
            throw ValidationError("--ws-url must be a ws:// or wss:// URL")
        }
        if let since, since < 0 { throw ValidationError("--since must be 0 or more") }
    }

    func run() async throws {
        defer { LoggedHTTPTransport.flush() }
        let topic = Topic(topic)!
        let client = connection.client(webSocketURL: webSocketURL.flatMap(URL.init(string:)))
        let cursorFile = try state.map { folder -> URL in
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            return URL(fileURLWithPath: folder).appendingPathComponent("watch-\(topic.description.replacingOccurrences(of: ":", with: "-")).json")
        }
        var cursor = TopicCursor()
        if let since { cursor = TopicCursor(position: since, topicSeq: since == 0 ? 0 : nil) }
        if let cursorFile, let data = try? Data(contentsOf: cursorFile) {
            cursor = try JSONDecoder().decode(TopicCursor.self, from: data)
        }
        let start = cursor
        _ = try await untilSignalled {
            for try await event in client.events(on: topic, from: start) {
                Output.line(event.raw)
                if let cursorFile {
                    // Written after the line is out: a restart may print the last line again
                    // at worst, never skip one. `.atomic` replaces the file in one rename.
                    try JSONEncoder().encode(TopicCursor(position: event.position, topicSeq: event.topicSeq))
                        .write(to: cursorFile, options: .atomic)
                }
            }
        }
    }
}
