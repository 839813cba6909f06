import Foundation
import RoboscopeRedis

/// A Redis master, one replica and three Sentinels on loopback (Debian's `redis-server`,
/// the Sentinels in its `--sentinel` mode), in a folder of their own, stopped by PID.
/// The master's name is `roboscope`; a failover takes a few seconds
/// (`down-after-milliseconds` 1000).
final class SentinelCluster: @unchecked Sendable {
    static let masterName = "roboscope"
    let folder: URL
    let masterPort: Int
    let replicaPort: Int
    let sentinelPorts: [Int]
    private var processes: [Int: Process] = [:]

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sentinels-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        masterPort = try FreePort.pick()
        replicaPort = try FreePort.pick()
        sentinelPorts = try (0..<3).map { _ in try FreePort.pick() }
        try start(port: masterPort, ["--port", String(masterPort)])
        try start(port: replicaPort, ["--port", String(replicaPort), "--replicaof", "127.0.0.1", String(masterPort)])
        for port in sentinelPorts {
            let configuration = folder.appendingPathComponent("sentinel-\(port).conf")
            try """
            port \(port)
            bind 127.0.0.1
            dir \(folder.path)
            sentinel monitor \(Self.masterName) 127.0.0.1 \(masterPort) 2
            sentinel down-after-milliseconds \(Self.masterName) 1000
            sentinel failover-timeout \(Self.masterName) 10000
            sentinel parallel-syncs \(Self.masterName) 1

            """.write(to: configuration, atomically: true, encoding: .utf8)
            try start(port: port, [configuration.path, "--sentinel"])
        }
    }

    /// `--redis-sentinels` for these Sentinels.
    var sentinelList: String { sentinelPorts.map { "127.0.0.1:\($0)" }.joined(separator: ",") }

    private func start(port: Int, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        let common =
            arguments.contains("--sentinel")
            ? [] : ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", folder.path]
        process.arguments = arguments + common
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        let log = folder.appendingPathComponent("redis-\(port).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        processes[port] = process
    }

    /// One command to the node on `port` (nil when it does not answer).
    func ask(_ port: Int, _ arguments: [String]) -> RedisReply? {
        guard let connection = try? RedisConnection(RedisURL(host: "127.0.0.1", port: port)) else { return nil }
        return try? connection.command(arguments)
    }

    /// The master's port as the first Sentinel that answers names it.
    func masterAsSentinelsSeeIt() -> Int? {
        for port in sentinelPorts {
            if let parts = ask(port, ["SENTINEL", "get-master-addr-by-name", Self.masterName])?.array, parts.count == 2,
                let text = parts[1].string, let master = Int(text)
            {
                return master
            }
        }
        return nil
    }

    /// Every Sentinel knows the replica and the two other Sentinels, and the replica is in
    /// sync: a failover can happen.
    func isReady() -> Bool {
        guard case .string(let info)? = ask(replicaPort, ["INFO", "replication"]),
            info.contains("master_link_status:up")
        else {
            return false
        }
        return sentinelPorts.allSatisfy { port in
            ask(port, ["SENTINEL", "replicas", Self.masterName])?.array?.count == 1
                && ask(port, ["SENTINEL", "sentinels", Self.masterName])?.array?.count == 2
        }
    }

    func kill(port: Int) {
        guard let process = processes.removeValue(forKey: port) else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit {
        for process in processes.values where process.isRunning {
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: folder)
    }
}
