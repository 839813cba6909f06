import Foundation
import Hummingbird
import HummingbirdWebSocket
import Synchronization

// A broadcast server the way hummingbird-websocket's examples build one: every
// WebSocket at /ws gets an AsyncStream that a task drains into its writer, and
// POST /publish yields the body to every stream. The gateway benchmark runs the
// same load against it and against roboscope's gateway.
//   reference-broadcast PORT

final class Subscribers: Sendable {
    private let streams = Mutex<[UUID: AsyncStream<String>.Continuation]>([:])

    func add(_ id: UUID, _ continuation: AsyncStream<String>.Continuation) {
        streams.withLock { $0[id] = continuation }
    }

    func remove(_ id: UUID) {
        _ = streams.withLock { $0.removeValue(forKey: id) }
    }

    func publish(_ message: String) {
        let targets = streams.withLock { Array($0.values) }
        for continuation in targets { continuation.yield(message) }
    }
}

let port = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 9090
let subscribers = Subscribers()
let router = Router()
router.post("/publish") { request, _ -> HTTPResponse.Status in
    let body = try await request.body.collect(upTo: 1 << 20)
    subscribers.publish(String(buffer: body))
    return .ok
}
let app = Application(
    router: router,
    server: .http1WebSocketUpgrade { request, _, _ in
        guard request.path == "/ws" else { return .dontUpgrade }
        return .upgrade([:]) { inbound, outbound, _ in
            let id = UUID()
            let (stream, continuation) = AsyncStream<String>.makeStream()
            subscribers.add(id, continuation)
            defer { subscribers.remove(id) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await message in stream { try await outbound.write(.text(message)) }
                }
                group.addTask {
                    for try await _ in inbound {}
                }
                _ = try await group.next()
                group.cancelAll()
            }
        }
    },
    configuration: .init(address: .hostname("127.0.0.1", port: port))
)
try await app.runService()
