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

/// The transport that works here, chosen at run time: `URLSessionWebSocketTask` when
/// the system's URLSession speaks WebSocket (Apple platforms; Linux with a libcurl built
/// with WebSocket support), else the kit's socket transport (Debian's and Ubuntu's
/// libcurl are built without it, and FoundationNetworking then answers "WebSockets not
/// supported by libcurl"). See `SelectedWebSocketTransport`.
public func defaultWebSocketTransport() -> any WebSocketTransport {
    SelectedWebSocketTransport()
}
