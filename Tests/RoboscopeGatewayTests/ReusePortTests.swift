import CLinuxSystem
import Foundation
import Glibc
@testable import RoboscopeGateway
import Testing

/// `serve --reuse-port`: several gateway processes listen on one port and the kernel
/// spreads new connections over them (issue 51: one process may open 20,000 files here,
/// so 100,000 connections on one box take several).
@Suite struct ReusePortTests {
    /// Connects to 127.0.0.1:`port` (blocking); the caller closes it.
    static func connect(to port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let result = roboscope_connect_ipv4(fd, "127.0.0.1", UInt16(port))
        #expect(result == 0, "connect: errno \(errno)")
        return fd
    }

    /// Every connection pending on `listener` now, accepted and closed.
    static func drain(_ listener: Int32) throws -> Int {
        var accepted = 0
        while case .done(let client) = try Socket.accept(listener) {
            close(client.fd)
            accepted += 1
        }
        return accepted
    }

    @Test func listenersThatReuseThePortShareItsConnections() throws {
        let first = try Socket.listen(host: "127.0.0.1", port: 0, reusePort: true)
        defer { close(first) }
        let port = Socket.localPort(first)
        let second = try Socket.listen(host: "127.0.0.1", port: port, reusePort: true)
        defer { close(second) }
        // A listener that does not ask to share is refused the port, as before.
        #expect(throws: SystemError.self) { _ = try Socket.listen(host: "127.0.0.1", port: port) }

        // The kernel picks a listener by the connection's addresses and ports: over 64
        // connections (each its own source port), both get some.
        let clients = try (0..<64).map { _ in try Self.connect(to: port) }
        defer { clients.forEach { close($0) } }
        var counts = (0, 0)
        let deadline = ContinuousClock.now + .seconds(10)
        while counts.0 + counts.1 < clients.count, ContinuousClock.now < deadline {
            counts.0 += try Self.drain(first)
            counts.1 += try Self.drain(second)
        }
        #expect(counts.0 + counts.1 == 64)
        #expect(counts.0 > 0 && counts.1 > 0, "spread: \(counts)")
    }
}
