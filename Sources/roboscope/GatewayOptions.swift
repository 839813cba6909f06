import ArgumentParser
import Foundation
import RoboscopeGateway

/// What `serve` runs: the REST API, the WebSocket gateway, or both.
enum ServeRole: String, ExpressibleByArgument, CaseIterable {
    case api, gateway, all

    var runsAPI: Bool { self != .gateway }
    var runsGateway: Bool { self != .api }
}

/// The WebSocket gateway's flags (docs/websocket.md explains each default).
struct GatewayOptions: ParsableArguments {
    @Option(name: .customLong("ws-threads"), help: "Gateway event loops (env ROBOSCOPE_WS_THREADS, default: one per core).")
    var threadsFlag: Int?

    @Option(name: .customLong("ws-max-message"), help: "Largest client message in bytes (env ROBOSCOPE_WS_MAX_MESSAGE, default 1048576).")
    var maxMessageFlag: Int?

    @Option(name: .customLong("ws-max-buffered"), help: "Bytes queued for one client before it is closed as too slow (env ROBOSCOPE_WS_MAX_BUFFERED, default 4194304).")
    var maxBufferedFlag: Int?

    @Option(name: .customLong("ws-ping-interval"), help: "Seconds of silence before a ping; as long again without an answer closes (env ROBOSCOPE_WS_PING_INTERVAL, default 30).")
    var pingIntervalFlag: Double?

    @Option(name: .customLong("ws-max-connections-per-client"), help: "Connections one client address may hold (env ROBOSCOPE_WS_MAX_CONNECTIONS_PER_CLIENT, default 1000).")
    var maxConnectionsFlag: Int?

    @Option(name: .customLong("ws-max-subscriptions"), help: "Subscriptions per connection (env ROBOSCOPE_WS_MAX_SUBSCRIPTIONS, default 100).")
    var maxSubscriptionsFlag: Int?

    @Option(name: .customLong("ws-presence-grace"), help: "Seconds a presence outlives its connection (env ROBOSCOPE_WS_PRESENCE_GRACE, default 5).")
    var presenceGraceFlag: Double?

    @Option(name: .customLong("ws-max-catch-up"), help: "Events a subscription with since may replay; more is refused as too_far_behind, pointing to the changes feed (env ROBOSCOPE_WS_MAX_CATCH_UP, default 10000).")
    var maxCatchUpFlag: Int?

    @Flag(name: .customLong("ws-echo"), help: "Serve /api/v1/ws/echo, which echoes every message (conformance runs; off by default).")
    var echo = false

    func threads() throws -> Int { try threadsFlag ?? Environment.int("ROBOSCOPE_WS_THREADS") ?? System.coreCount }
    func maxMessage() throws -> Int { try maxMessageFlag ?? Environment.int("ROBOSCOPE_WS_MAX_MESSAGE") ?? 1 << 20 }
    func maxBuffered() throws -> Int { try maxBufferedFlag ?? Environment.int("ROBOSCOPE_WS_MAX_BUFFERED") ?? 4 << 20 }
    func pingInterval() throws -> Double { try pingIntervalFlag ?? Environment.double("ROBOSCOPE_WS_PING_INTERVAL") ?? 30 }
    func maxConnections() throws -> Int { try maxConnectionsFlag ?? Environment.int("ROBOSCOPE_WS_MAX_CONNECTIONS_PER_CLIENT") ?? 1000 }
    func maxSubscriptions() throws -> Int { try maxSubscriptionsFlag ?? Environment.int("ROBOSCOPE_WS_MAX_SUBSCRIPTIONS") ?? 100 }
    func maxCatchUp() throws -> Int { try maxCatchUpFlag ?? Environment.int("ROBOSCOPE_WS_MAX_CATCH_UP") ?? 10_000 }
    func presenceGrace() throws -> Double { try presenceGraceFlag ?? Environment.double("ROBOSCOPE_WS_PRESENCE_GRACE") ?? 5 }

    func validate() throws {
        guard (1...64).contains(try threads()) else { throw ValidationError("--ws-threads must be 1 to 64") }
        guard (125...(1 << 30)).contains(try maxMessage()) else { throw ValidationError("--ws-max-message must be 125 bytes to 1 GiB") }
        guard try maxBuffered() >= 1024 else { throw ValidationError("--ws-max-buffered must be at least 1024") }
        guard (0.1...3600).contains(try pingInterval()) else { throw ValidationError("--ws-ping-interval must be 0.1 to 3600 seconds") }
        guard try maxConnections() >= 1 else { throw ValidationError("--ws-max-connections-per-client must be at least 1") }
        guard (1...10_000).contains(try maxSubscriptions()) else { throw ValidationError("--ws-max-subscriptions must be 1 to 10000") }
        guard try maxCatchUp() >= 1 else { throw ValidationError("--ws-max-catch-up must be at least 1") }
        guard (0...600).contains(try presenceGrace()) else { throw ValidationError("--ws-presence-grace must be 0 to 600 seconds") }
    }

    func configuration(host: String, port: Int, presenceWindow: Int) throws -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.threads = try threads()
        configuration.maxMessageSize = try maxMessage()
        configuration.maxBufferedBytes = try maxBuffered()
        configuration.pingInterval = .milliseconds(Int64(try pingInterval() * 1000))
        configuration.maxConnectionsPerClient = try maxConnections()
        configuration.maxSubscriptionsPerConnection = try maxSubscriptions()
        configuration.presenceGrace = .milliseconds(Int64(try presenceGrace() * 1000))
        configuration.presenceWindow = .seconds(presenceWindow)
        configuration.maxCatchUpEvents = try maxCatchUp()
        configuration.echo = echo
        return configuration
    }
}

enum System {
    static var coreCount: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }
}
