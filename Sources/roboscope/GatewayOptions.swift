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
    @Option(name: Settings.wsThreads.name, help: Settings.wsThreads.help) var threadsFlag: Int?
    @Option(name: Settings.wsMaxMessage.name, help: Settings.wsMaxMessage.help) var maxMessageFlag: Int?
    @Option(name: Settings.wsMaxBuffered.name, help: Settings.wsMaxBuffered.help) var maxBufferedFlag: Int?
    @Option(name: Settings.wsPingInterval.name, help: Settings.wsPingInterval.help) var pingIntervalFlag: Double?
    @Option(name: Settings.wsMaxConnections.name, help: Settings.wsMaxConnections.help) var maxConnectionsFlag: Int?
    @Option(name: Settings.wsMaxSubscriptions.name, help: Settings.wsMaxSubscriptions.help) var maxSubscriptionsFlag:
        Int?
    @Option(name: Settings.wsMaxPendingSubscribes.name, help: Settings.wsMaxPendingSubscribes.help) var maxPendingFlag:
        Int?
    @Option(name: Settings.wsMaxPresence.name, help: Settings.wsMaxPresence.help) var maxPresenceFlag: Int?
    @Option(name: Settings.wsOpRate.name, help: Settings.wsOpRate.help) var opRateFlag: Double?
    @Option(name: Settings.wsSubjectOpRate.name, help: Settings.wsSubjectOpRate.help) var subjectOpRateFlag: Double?
    @Option(name: Settings.wsTenantOpRate.name, help: Settings.wsTenantOpRate.help) var tenantOpRateFlag: Double?
    @Option(name: Settings.wsMaxCatchUp.name, help: Settings.wsMaxCatchUp.help) var maxCatchUpFlag: Int?
    @Option(name: Settings.wsPresenceGrace.name, help: Settings.wsPresenceGrace.help) var presenceGraceFlag: Double?
    @Option(name: Settings.wsDeflate.name, help: Settings.wsDeflate.help) var deflateFlag: String?
    @Option(name: Settings.wsDeflateWindowBits.name, help: Settings.wsDeflateWindowBits.help) var deflateWindowBitsFlag:
        Int?

    @Flag(
        name: .customLong("ws-echo"),
        help: "Serve /api/v1/ws/echo, which echoes every message (conformance runs; off by default).")
    var echo = false

    @Flag(
        name: .customLong("reuse-port"),
        help:
            """
            Let several gateway processes listen on the same --ws-port (SO_REUSEPORT; env \
            ROBOSCOPE_REUSE_PORT=true): the kernel spreads new connections over them, so one box \
            holds more connections than one process may open files. Give each its own --http-port.
            """
    )
    var reusePortFlag = false

    func reusePort() -> Bool {
        reusePortFlag || Environment.string("ROBOSCOPE_REUSE_PORT")?.lowercased() == "true"
    }

    func threads() throws -> Int { try Settings.wsThreads.resolve(threadsFlag) ?? System.coreCount }
    func maxMessage() throws -> Int { try Settings.wsMaxMessage.value(maxMessageFlag) }
    func maxBuffered() throws -> Int { try Settings.wsMaxBuffered.value(maxBufferedFlag) }
    func pingInterval() throws -> Double { try Settings.wsPingInterval.value(pingIntervalFlag) }
    func maxConnections() throws -> Int { try Settings.wsMaxConnections.value(maxConnectionsFlag) }
    func maxSubscriptions() throws -> Int { try Settings.wsMaxSubscriptions.value(maxSubscriptionsFlag) }
    func maxPending() throws -> Int { try Settings.wsMaxPendingSubscribes.value(maxPendingFlag) }
    func maxPresence() throws -> Int { try Settings.wsMaxPresence.value(maxPresenceFlag) }
    func opRate() throws -> Double { try Settings.wsOpRate.value(opRateFlag) }
    func subjectOpRate() throws -> Double { try Settings.wsSubjectOpRate.value(subjectOpRateFlag) }
    func tenantOpRate() throws -> Double { try Settings.wsTenantOpRate.value(tenantOpRateFlag) }
    func maxCatchUp() throws -> Int { try Settings.wsMaxCatchUp.value(maxCatchUpFlag) }
    func presenceGrace() throws -> Double { try Settings.wsPresenceGrace.value(presenceGraceFlag) }
    func deflate() throws -> Bool {
        switch try Settings.wsDeflate.value(deflateFlag) {
        case "on": return true
        case "off": return false
        case let other: throw ValidationError("--ws-deflate must be on or off, not \(other)")
        }
    }
    func deflateWindowBits() throws -> Int { try Settings.wsDeflateWindowBits.value(deflateWindowBitsFlag) }

    /// Building the configuration resolves every setting, and each refuses a value outside
    /// its bounds (Settings), naming the flag.
    func validate() throws {
        _ = try configuration(host: "", port: 0, presenceWindow: 1)
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
        configuration.maxPendingSubscriptions = try maxPending()
        configuration.maxPresencePerConnection = try maxPresence()
        configuration.opRate = try opRate()
        configuration.opBurst = max(1, try opRate() * 2)
        configuration.subjectOpRate = try subjectOpRate()
        configuration.subjectOpBurst = max(1, try subjectOpRate() * 2)
        configuration.tenantOpRate = try tenantOpRate()
        configuration.echo = echo
        configuration.reusePort = reusePort()
        configuration.deflate = try deflate() ? .init(maxWindowBits: try deflateWindowBits()) : nil
        return configuration
    }
}

enum System {
    static var coreCount: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }
}
