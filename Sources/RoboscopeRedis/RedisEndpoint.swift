import Foundation
import Synchronization

/// Where the process finds its Redis master: the address of `--redis-url`, or, with
/// Sentinels, whichever node they name as the master of `masterName` right now
/// (docs/operations.md, "High availability"). The URL's password and database apply to
/// the master either way; Sentinels are asked without them.
///
/// hiredis has no Sentinel support, so the protocol is ours: ask each Sentinel in turn
/// for `SENTINEL get-master-addr-by-name`, connect there, and believe it only when the
/// node's `ROLE` says master (a Sentinel may not have seen the failover yet). Every new
/// connection asks again, and a connection stops being used (`RedisConnection.isBroken`)
/// when it fails, when its node answers `READONLY` (it was demoted), or when a
/// Sentinel announces `+switch-master` (`SentinelWatcher` moves `epoch`).
public struct RedisEndpoint: Sendable {
    public var url: RedisURL
    public var sentinels: [RedisAddress]
    public var masterName: String
    /// Moved on every `+switch-master`: connections made under an earlier value retire.
    public let epoch: MasterEpoch

    /// A fixed address: no Sentinels.
    public init(url: RedisURL) {
        self.url = url
        sentinels = []
        masterName = ""
        epoch = MasterEpoch()
    }

    public init(url: RedisURL, sentinels: [RedisAddress], masterName: String) {
        self.url = url
        self.sentinels = sentinels
        self.masterName = masterName
        epoch = MasterEpoch()
    }

    public var usesSentinels: Bool { !sentinels.isEmpty }

    /// A connection to the master, with the URL's password and database.
    public func connect(timeout: Duration = .milliseconds(800)) throws -> RedisConnection {
        guard usesSentinels else { return try RedisConnection(url, timeout: timeout) }
        let epochAtStart = epoch.value
        var problems: [String] = []
        for sentinel in sentinels {
            do {
                let asked = try RedisConnection(sentinel.url, timeout: timeout)
                let reply = try asked.command(["SENTINEL", "get-master-addr-by-name", masterName])
                guard let parts = reply.array, parts.count == 2, let host = parts[0].string,
                    let portText = parts[1].string, let port = Int(portText)
                else {
                    problems.append("\(sentinel): knows no master named \(masterName)")
                    continue
                }
                var master = url
                master.host = host
                master.port = port
                let connection = try RedisConnection(master, timeout: timeout, epoch: (epoch, epochAtStart))
                let role = try connection.command(["ROLE"])
                guard role.array?.first?.string == "master" else {
                    problems.append("\(sentinel) named \(host):\(port), which is not a master (yet)")
                    continue
                }
                return connection
            } catch {
                problems.append("\(sentinel): \(error)")
            }
        }
        throw RedisError(
            .connection, "no Sentinel named a reachable master \(masterName): \(problems.joined(separator: "; "))")
    }
}

/// `host:port` of a Sentinel.
public struct RedisAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    /// `host:port[,host:port...]` (`--redis-sentinels`); nil when any entry is malformed.
    public static func list(_ text: String) -> [RedisAddress]? {
        let entries = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !entries.isEmpty else { return nil }
        var addresses: [RedisAddress] = []
        for entry in entries {
            guard let colon = entry.lastIndex(of: ":"), colon != entry.startIndex,
                let port = Int(entry[entry.index(after: colon)...]), (1...65535).contains(port)
            else { return nil }
            addresses.append(RedisAddress(host: String(entry[..<colon]), port: port))
        }
        return addresses
    }

    var url: RedisURL { RedisURL(host: host, port: port) }

    public var description: String { "\(host):\(port)" }
}

/// A counter shared by every connection of an endpoint: a connection made under an
/// earlier value is retired before its next use.
public final class MasterEpoch: Sendable {
    private let current = Atomic<Int>(0)

    public init() {}

    public var value: Int { current.load(ordering: .acquiring) }

    /// The master changed: every connection made before is to be replaced.
    public func advance() {
        current.add(1, ordering: .releasing)
    }
}
