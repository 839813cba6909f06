import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The first WebSocket transport of `candidates` that this system supports, decided
/// once, at the first connection, and kept for the process.
///
/// Whether URLSession speaks WebSocket is a property of the system (the libcurl that
/// FoundationNetworking was linked with), not of the platform the kit was compiled for,
/// so it is asked at run time: a `URLSessionWebSocketTask` to a closed loopback port
/// fails at once, with `URLError.unsupportedURL` where WebSocket is missing and a
/// connection error where it is there (`WebSocketSupport`). Only the candidates differ
/// by platform: the socket transport is built on Linux only (the POSIX calls it makes
/// are Glibc's), so on Apple platforms URLSession is the one candidate and nothing is
/// asked.
public struct SelectedWebSocketTransport: WebSocketTransport {
    /// What a connection of this process goes through, once decided.
    public enum Choice: Sendable, Equatable {
        /// `URLSessionWebSocketTransport`.
        case urlSession
        /// `SocketWebSocketTransport` (Linux).
        case socket
    }

    /// The transports this build has, preferred first.
    public static var candidates: [Choice] {
        var candidates: [Choice] = [.urlSession]
        #if canImport(Glibc)
        candidates.append(.socket)
        #endif
        return candidates
    }

    /// The first decision (two connections may ask at once).
    private static let decided = Locked<Choice?>(nil)

    /// The transport of this process: decided at its first connection.
    public init() {}

    /// The transport connections go through here (asks the system the first time).
    public static func choice() async -> Choice {
        if let choice = decided.withLock({ $0 }) { return choice }
        let supported = candidates.count > 1 ? await WebSocketSupport.urlSessionSpeaksWebSocket() : true
        let candidate = WebSocketSupport.choose(from: candidates, urlSessionSupported: supported)
        return decided.withLock { choice in
            if choice == nil { choice = candidate }
            return choice ?? candidate
        }
    }

    /// Connects through the chosen transport.
    public func connect(to url: URL, headers: [String: String]) async throws -> any WebSocketConnection {
        switch await Self.choice() {
        case .urlSession:
            return try await URLSessionWebSocketTransport().connect(to: url, headers: headers)
        case .socket:
            #if canImport(Glibc)
            return try await SocketWebSocketTransport().connect(to: url, headers: headers)
            #else
            throw RoboscopeError.transport("no socket WebSocket transport on this platform")
            #endif
        }
    }
}

/// Whether this system's URLSession speaks WebSocket, and what follows from it.
package enum WebSocketSupport {
    /// The first candidate the system supports: URLSession when it speaks WebSocket,
    /// else the next one (a build with URLSession alone keeps it: its errors say why).
    package static func choose(
        from candidates: [SelectedWebSocketTransport.Choice], urlSessionSupported: Bool
    )
        -> SelectedWebSocketTransport.Choice
    {
        candidates.first { $0 != .urlSession || urlSessionSupported } ?? .urlSession
    }

    /// How the system answers a WebSocket to a closed port: `unsupportedURL` at once where
    /// its URLSession has no WebSocket; a connection error (or nothing within `timeout`:
    /// something listens there) where it has.
    package static func urlSessionSpeaksWebSocket(timeout: Duration = .seconds(2)) async -> Bool {
        let task = URLSession.shared.webSocketTask(with: URL(string: "ws://127.0.0.1:9/")!)
        task.resume()
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    _ = try await task.receive()
                    return true
                } catch let error as URLError {
                    return error.code != .unsupportedURL
                } catch {
                    return (error as NSError).code != URLError.unsupportedURL.rawValue
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return true
            }
            let answer = await group.next() ?? true
            // Ends a receive still waiting, so that the group can finish.
            task.cancel(with: .normalClosure, reason: nil)
            group.cancelAll()
            return answer
        }
    }
}
