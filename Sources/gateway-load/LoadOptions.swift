/// Command-line settings of the load generator (see `usage`).
struct LoadOptions: Sendable {
    enum Mode: String, Sendable { case gateway, reference, presence }

    var mode = Mode.gateway
    var wsPort = 8081
    var wsPath = "/api/v1/ws"
    var httpPort = 8080
    var connections = 100
    var threads = 2
    /// Work sessions the subscribers follow and the writers post markers into (gateway
    /// mode): connection i follows the (i mod n)th, and writes go round the list. One
    /// session is a broadcast; many are collaboration's shape (a few devices per session).
    var sessions: [String] = []
    var session: String { sessions.first ?? "" }
    /// The session that the `number`th connection follows or write goes to: the list in turn.
    func session(_ number: Int) -> String { sessions.isEmpty ? "" : sessions[number % sessions.count] }
    /// Writes per second; 0 writes as fast as `writers` loops can.
    var rate = 100.0
    var writers = 1
    var seconds = 10.0
    /// Open, subscribe, hold idle this long, and report instead of writing.
    var holdOnly = false
    var serverPID: Int32 = 0
    /// The loopback address the WebSocket connections come from (127.0.0.1 unless said):
    /// each source address has its own ~28,000 ephemeral ports toward the gateway's port,
    /// so 100,000 connections come from several (`--source-address 127.0.0.2`).
    var sourceAddress: String?
    /// A bearer token for the upgrades and the writes (a server with authentication on).
    var token: String?
    /// Whether to offer permessage-deflate, and how what arrives is inflated.
    var deflate = Deflate.off

    enum Deflate {
        case off
        /// RoboscopeKit's offer; every connection inflates every message it receives.
        case everyCopy
        /// The offer with `server_no_context_takeover`, so that each message inflates on
        /// its own: a thread inflates each distinct message once and finds the copies
        /// other connections receive by their bytes, as if each device inflated on its
        /// own CPU rather than on the two cores the server runs on.
        case distinctMessages
    }

    /// The header line carrying `token`, or nothing.
    var authorizationLine: String { token.map { "Authorization: Bearer \($0)\r\n" } ?? "" }

    static let usage = """
        gateway-load --mode gateway|reference|presence --ws-port P [--ws-path /api/v1/ws] --http-port P
                     --connections N [--threads T] [--session UUID[,UUID...]] [--rate R] [--writers W]
                     [--seconds S] [--hold] [--server-pid PID] [--token JWT] [--deflate | --deflate-shared]
                     [--source-address 127.0.0.N]
        Opens N WebSocket connections (in gateway mode each subscribed to one of the
        sessions, in turn), posts writes over HTTP (spread over the sessions in turn), and
        prints one JSON object: delivery latency from the HTTP response to receipt at
        each subscriber, deliveries expected and matched, messages per second, server memory.
        In presence mode each connection sends `presence` ops for the session, one at a
        time, each for a user it has not held yet (so each costs the gateway a heartbeat
        in Redis), the next as soon as the last is answered, for S seconds: the JSON
        gives the answers per second. --deflate offers permessage-deflate on every
        connection (a connection the server does not agree it with counts as not opened)
        and inflates every message; --deflate-shared offers it with server_no_context_takeover
        and inflates each distinct message once per thread (the copies found by their bytes).
        """

    static func parse(_ arguments: [String]) -> LoadOptions? {
        var options = LoadOptions()
        var iterator = arguments.makeIterator()
        while let flag = iterator.next() {
            if flag == "--hold" { options.holdOnly = true; continue }
            if flag == "--deflate" { options.deflate = .everyCopy; continue }
            if flag == "--deflate-shared" { options.deflate = .distinctMessages; continue }
            guard let value = iterator.next() else { return nil }
            switch flag {
            case "--mode": guard let mode = Mode(rawValue: value) else { return nil }; options.mode = mode
            case "--ws-port": options.wsPort = Int(value) ?? 0
            case "--ws-path": options.wsPath = value
            case "--http-port": options.httpPort = Int(value) ?? 0
            case "--connections": options.connections = Int(value) ?? 0
            case "--threads": options.threads = max(1, Int(value) ?? 1)
            case "--session": options.sessions = value.split(separator: ",").map(String.init)
            case "--rate": options.rate = Double(value) ?? 0
            case "--writers": options.writers = max(1, Int(value) ?? 1)
            case "--seconds": options.seconds = Double(value) ?? 0
            case "--server-pid": options.serverPID = Int32(value) ?? 0
            case "--token": options.token = value
            case "--source-address": options.sourceAddress = value
            default: return nil
            }
        }
        return options
    }
}
