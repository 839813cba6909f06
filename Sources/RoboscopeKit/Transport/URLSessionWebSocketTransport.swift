import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// WebSocket through `URLSessionWebSocketTask`, with a raised maximum message size: a
/// catch-up can carry a large marker list. The default on Apple platforms; it compiles
/// everywhere (so every CI run builds it), but on Linux FoundationNetworking's
/// WebSocket needs a libcurl built with WebSocket support, which Debian does not ship.
public struct URLSessionWebSocketTransport: WebSocketTransport {
    let session: URLSession
    public var maximumMessageSize: Int

    /// Connections of `session`, accepting messages up to `maximumMessageSize`.
    public init(session: URLSession = .shared, maximumMessageSize: Int = 16 << 20) {
        self.session = session
        self.maximumMessageSize = maximumMessageSize
    }

    public func connect(to url: URL, headers: [String: String]) async throws -> any WebSocketConnection {
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let task = session.webSocketTask(with: request)
        task.maximumMessageSize = maximumMessageSize
        task.resume()
        return Connection(task: task)
    }

    final class Connection: WebSocketConnection {
        let task: URLSessionWebSocketTask

        init(task: URLSessionWebSocketTask) {
            self.task = task
        }

        func send(_ text: String) async throws {
            do { try await task.send(.string(text)) } catch { throw RoboscopeError.transport("\(error)") }
        }

        func receive() async throws -> String {
            do {
                switch try await task.receive() {
                case .string(let text): return text
                case .data(let data): return String(decoding: data, as: UTF8.self)
                @unknown default: throw RoboscopeError.malformedResponse("an unknown WebSocket message")
                }
            } catch let error as RoboscopeError {
                throw error
            } catch {
                throw RoboscopeError.transport("\(error)")
            }
        }

        func close() async {
            task.cancel(with: .normalClosure, reason: nil)
        }
    }
}
