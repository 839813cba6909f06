import Foundation
import Glibc
import Testing

/// The gateway at the descriptor ceiling (issue 45): held at 20,000 connections it logged
/// "out of file descriptors" 40,000-60,000 times a second, burnt half a core, stopped the
/// HTTP side answering and died. Here the process may open 256 files: the gateway stops
/// at its ceiling (the limit less a reserve), keeps the reserve for the HTTP side, says so
/// once, and does not spin.
@Suite struct DescriptorCeilingTests {
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // utime and stime are fields 14 and 15 of stat; 12 and 13 after the command.
        return ((Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test func atTheCeilingTheGatewayStopsAcceptingWithoutSpinningAndHTTPStillAnswers() async throws {
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("fd_ceiling"),
            extraArguments: ["--ws-max-connections-per-client", "100000"],
            wrapper: ["/usr/bin/prlimit", "--nofile=256:256", "--"])
        var sockets: [Int32] = []
        defer { sockets.forEach { Glibc.close($0) } }
        // Each sends its upgrade at once: those accepted become sockets that stay (a bare
        // connection would be closed by the upgrade timeout on a loaded machine), those
        // waiting in the backlog are upgraded when taken in.
        let upgrade = Array(
            """
            GET /api/v1/ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
            Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n
            """.utf8)
        for _ in 0..<200 {
            let socket = try WebSocketClient.connect(port: server.wsPort)
            _ = upgrade.withUnsafeBytes { write(socket, $0.baseAddress, $0.count) }
            sockets.append(socket)
        }
        // 256 less a reserve of 128: at most 128 accepted; the rest wait in the backlog.
        try await eventually("the gateway reached its ceiling", within: 20) {
            server.log().contains("at the connection ceiling (128)")
        }
        let connections = try await server.metric("roboscope_ws_connections")
        #expect(connections <= 128)
        let pid = server.process.processIdentifier
        let before = Self.cpuSeconds(pid)
        let started = Date()
        // The HTTP side still has descriptors: probes, reads and writes answer.
        for _ in 0..<20 { #expect(try await server.client.get("/healthz").status == 200) }
        #expect(try await server.client.get("/api/v1/spaces").status == 200)
        // Not a wait for a condition: the window over which the CPU of a process that has
        // nothing to do but hold its backlog is measured (a spinning acceptor fills it).
        try await Task.sleep(for: .seconds(2))
        let cpu = Self.cpuSeconds(pid) - before
        #expect(cpu < 0.5 * Date().timeIntervalSince(started), "the acceptor does not spin: \(cpu) s of CPU")
        let lines = server.log().components(separatedBy: "at the connection ceiling").count - 1
        #expect(lines <= 5, "said about once a second, not at every wake-up: \(lines) lines")
        // Connections that go make room: the waiting ones are taken.
        for socket in sockets.prefix(50) { Glibc.close(socket) }
        sockets.removeFirst(50)
        try await eventually("the backlog is taken in as room appears", within: 20) {
            try await server.metric("roboscope_ws_connections") >= 124
        }
        #expect(server.process.isRunning)
        await server.terminate()
    }
}
