import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The real `roboscope` binary, started on a free port against a given database.
final class ServerProcess: @unchecked Sendable {
    let process = Process()
    let port: Int
    let wsPort: Int
    let client: HTTPClient
    let logURL: URL

    static var binary: URL {
        if let explicit = ProcessInfo.processInfo.environment["ROBOSCOPE_BINARY"] {
            return URL(fileURLWithPath: explicit)
        }
        return TestDatabase.repositoryRoot.appendingPathComponent(".build/debug/roboscope")
    }

    static var redisURL: String {
        ProcessInfo.processInfo.environment["REDIS_URL"] ?? "redis://127.0.0.1:56379/0"
    }

    /// `ports` (HTTP, WebSocket): the ones of a server this one replaces after a crash.
    /// `wrapper`: a command that execs the server (`prlimit --nofile=256 --`), same pid.
    init(
        databaseURL: String, redisURL: String = ServerProcess.redisURL, extraArguments: [String] = [],
        ports: (http: Int, ws: Int)? = nil, wrapper: [String] = []
    ) async throws {
        port = try ports?.http ?? FreePort.pick()
        wsPort = try ports?.ws ?? FreePort.pick()
        logURL = FileManager.default.temporaryDirectory.appendingPathComponent("roboscope-test-\(port).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        process.executableURL = Self.binary
        process.arguments =
            [
                "serve", "--database-url", TestDatabase.patient(databaseURL), "--redis-url", redisURL, "--host",
                "127.0.0.1", "--http-port", String(port),
                "--ws-port", String(wsPort), "--schema-dir", TestDatabase.schemaDirectory.path,
                "--log-level", "warning",
            ]
            // Many servers run at once against one cluster: a small pool each keeps them
            // under its connection limit.
            + (extraArguments.contains("--db-pool-size") ? [] : ["--db-pool-size", "4"])
            // Every server signs its history, as a production one does, with the tests' key.
            + (extraArguments.contains("--signing-key-file")
                ? []
                : [
                    "--signing-key-file", try TestHistoryKey.path(), "--checkpoint-interval", "0.2",
                    // One deployment per database: the servers share Redis, where each
                    // log's newest checkpoint is witnessed under its name.
                    "--deployment-name", TestHistoryKey.deployment(of: databaseURL),
                ])
            + extraArguments
        if let command = wrapper.first {
            process.arguments = Array(wrapper.dropFirst()) + [Self.binary.path] + (process.arguments ?? [])
            process.executableURL = URL(fileURLWithPath: command)
        }
        process.standardOutput = log
        process.standardError = log
        try process.run()
        ChildProcesses.register(process.processIdentifier)
        client = HTTPClient(base: URL(string: "http://127.0.0.1:\(port)")!)
        try await waitUntilReady()
    }

    func waitUntilReady() async throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if !process.isRunning {
                throw TestFailure("server exited early: \(log())")
            }
            if let response = try? await client.send("GET", "/readyz"), response.status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("server did not become ready: \(log())")
    }

    func log() -> String {
        (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
    }

    /// Sends SIGTERM and waits for the exit status.
    @discardableResult
    func terminate() async -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        process.terminate()
        return await process.exitStatus()
    }

    /// Sends SIGTERM and goes on (for a `defer`, which cannot wait): the server stops
    /// by itself, and the process is killed at the latest when this object goes.
    func stopWithoutWaiting() {
        if process.isRunning { process.terminate() }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

enum FreePort {
    /// Ports handed out in this process: two tests never get the same one.
    private static let given = Mutex<Set<Int>>([])

    /// An unused loopback port below the kernel's ephemeral range (32768 and up on
    /// Linux). A port the kernel picks from that range can be taken, between this check
    /// and the server's own bind, as the local port of any connection the tests open:
    /// a CI run failed with `bind: Address already in use` that way.
    static func pick() throws -> Int {
        for _ in 0..<500 {
            let port = Int.random(in: 20_000..<32_768)
            guard given.withLock({ $0.insert(port).inserted }) else { continue }
            if isFree(port) { return port }
        }
        throw TestFailure("no free loopback port below 32768")
    }

    /// Whether a listener could bind `port` on 127.0.0.1 now (with SO_REUSEADDR, as the
    /// servers bind, so a port in TIME_WAIT counts as free).
    private static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        return Loopback.bind(fd, port: port) == 0
    }
}

/// Servers still running when the test process exits are killed, so none outlive a run.
enum ChildProcesses {
    nonisolated(unsafe) static var pids: [pid_t] = []
    static let lock = NSLock()
    nonisolated(unsafe) static var installed = false

    static func register(_ pid: pid_t) {
        lock.lock()
        defer { lock.unlock() }
        pids.append(pid)
        // The test command stops these by PID should the test process itself die.
        if let file = ProcessInfo.processInfo.environment["ROBOSCOPE_TEST_PIDS"],
            let handle = FileHandle(forWritingAtPath: file)
                ?? (FileManager.default.createFile(atPath: file, contents: nil)
                    ? FileHandle(forWritingAtPath: file) : nil)
        {
            handle.seekToEndOfFile()
            handle.write(Data("\(pid)\n".utf8))
            try? handle.close()
        }
        if !installed {
            installed = true
            atexit {
                for pid in ChildProcesses.pids { kill(pid, SIGKILL) }
            }
        }
    }
}
