import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP forwarder (socat) standing between the service and Postgres or
/// Redis, so a test can cut a server off and bring it back without touching it; with
/// `terminatingTLS`, a TLS terminator in front of the service, as an ingress would be.
final class TCPProxy: @unchecked Sendable {
    let port: Int
    let target: (host: String, port: Int)
    private let tls: TestCertificates.Server?
    private var process: Process?

    init(to target: (host: String, port: Int), terminatingTLS tls: TestCertificates.Server? = nil) throws {
        self.port = try FreePort.pick()
        self.target = target
        self.tls = tls
    }

    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/socat")
        // Not our stdout: a proxy left behind must not hold the test runner's pipe open.
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let listen =
            tls.map {
                "OPENSSL-LISTEN:\(port),bind=127.0.0.1,reuseaddr,fork,verify=0,cert=\($0.certificate),key=\($0.key)"
            }
            ?? "TCP-LISTEN:\(port),bind=127.0.0.1,reuseaddr,fork"
        process.arguments = [listen, "TCP:\(target.host):\(target.port)"]
        try process.run()
        ChildProcesses.register(process.processIdentifier)
        self.process = process
        // Wait until it accepts connections.
        for _ in 0..<100 {
            if Self.canConnect(port) { return }
            usleep(20_000)
        }
        throw TestFailure("proxy did not start")
    }

    /// Kills the proxy and every connection it forwards.
    func stop() {
        guard let process else { return }
        // The listener first, so that it forks no new forwarder, then the forwarders.
        let parent = process.processIdentifier
        kill(parent, SIGSTOP)
        let children = Process()
        children.executableURL = URL(fileURLWithPath: "/usr/bin/pkill")
        children.arguments = ["-KILL", "-P", String(parent)]
        try? children.run()
        children.waitUntilExit()
        kill(parent, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    static func canConnect(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        return Loopback.connect(fd, port: port) == 0
    }

    deinit { stop() }
}

extension TCPProxy {
    /// A fresh database reached through a started proxy: the URL to give the server,
    /// and the proxy to cut and restore.
    static func freshDatabase(_ label: String) async throws -> (url: String, proxy: TCPProxy) {
        let components = URLComponents(string: try await TestDatabase.fresh(label))!
        let proxy = try TCPProxy(to: (components.host ?? "127.0.0.1", components.port ?? 5432))
        try proxy.start()
        var viaProxy = components
        viaProxy.port = proxy.port
        return (viaProxy.string!, proxy)
    }
}
