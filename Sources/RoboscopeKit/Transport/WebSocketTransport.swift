import Foundation

/// How the kit speaks WebSocket: text messages in and out.
public protocol WebSocketTransport: Sendable {
    /// Opens a connection (the upgrade done); throws `RoboscopeError` when it cannot.
    func connect(to url: URL, headers: [String: String]) async throws -> any WebSocketConnection
}

/// One open WebSocket connection.
public protocol WebSocketConnection: Sendable {
    func send(_ text: String) async throws
    /// The next text message; throws `RoboscopeError.transport` once the connection is
    /// gone (closed by either side, or lost).
    func receive() async throws -> String
    /// Closes (1000) and releases the connection; `receive` then throws.
    func close() async
}

/// The transport every platform has: `URLSessionWebSocketTask` on Apple platforms,
/// `SocketWebSocketTransport` elsewhere (FoundationNetworking's WebSocket needs a
/// libcurl built with WebSocket support, which Linux distributions do not ship).
public func defaultWebSocketTransport() -> any WebSocketTransport {
    #if canImport(Darwin)
    return URLSessionWebSocketTransport()
    #else
    return SocketWebSocketTransport()
    #endif
}
