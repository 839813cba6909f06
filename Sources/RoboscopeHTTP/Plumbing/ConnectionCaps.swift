import Metrics
import NIOCore
import RoboscopeDomain
import Synchronization

/// How many connections the HTTP port holds at once: in all, and per client address
/// (`--http-max-connections`, `--http-max-connections-per-client`). Past either, a new
/// connection is closed at once, before it costs a request's work or a descriptor for
/// longer than that (issue 45: 21,500 incomplete request heads from five addresses took
/// the process to its descriptor limit, and `/readyz` stopped answering). A trusted
/// proxy's connections count in the total only: behind it, every client shares its
/// address (nginx's `limit_conn` keys on the real address the same way).
public final class ConnectionCaps: Sendable {
    public let maxConnections: Int
    public let maxPerClient: Int
    let proxies: TrustedProxies
    private let state = Mutex<(total: Int, perClient: [String: Int])>((0, [:]))
    private let refusedTotal = Counter(label: ConnectionCaps.refusedLabel, dimensions: [("limit", "process")])
    private let refusedPerClient = Counter(label: ConnectionCaps.refusedLabel, dimensions: [("limit", "client")])
    private static let refusedLabel = "roboscope_http_connections_refused_total"
    /// Nil for the ops port's caps: the series are the HTTP port's.
    private let open: Gauge?

    public init(
        maxConnections: Int = 10_000, maxPerClient: Int = 256, proxies: TrustedProxies = TrustedProxies(),
        recordsMetrics: Bool = true
    ) {
        self.maxConnections = maxConnections
        self.maxPerClient = maxPerClient
        self.proxies = proxies
        open = recordsMetrics ? Gauge(label: "roboscope_http_connections") : nil
        refusedTotal.increment(by: 0)
        refusedPerClient.increment(by: 0)
        open?.record(0)
    }

    /// Connections held now.
    public var count: Int { state.withLock { $0.total } }

    /// Takes a place for a connection from `peer` (nil: an address we cannot read, counted
    /// in the total only); false when a cap is reached.
    func take(peer: String?) -> Bool {
        let client = peer.flatMap { proxies.trusts($0) ? nil : $0 }
        return state.withLock { state in
            if state.total >= maxConnections {
                refusedTotal.increment()
                return false
            }
            if let client, state.perClient[client, default: 0] >= maxPerClient {
                refusedPerClient.increment()
                return false
            }
            state.total += 1
            if let client { state.perClient[client, default: 0] += 1 }
            open?.record(state.total)
            return true
        }
    }

    func give(peer: String?) {
        let client = peer.flatMap { proxies.trusts($0) ? nil : $0 }
        state.withLock { state in
            state.total -= 1
            if let client {
                state.perClient[client, default: 1] -= 1
                if state.perClient[client] == 0 { state.perClient[client] = nil }
            }
            open?.record(state.total)
        }
    }
}

/// The first handler a new HTTP connection meets past the decoder: it takes the
/// connection's place under the caps, or closes it at once; the place is given back when
/// the connection goes.
final class ConnectionCapHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let caps: ConnectionCaps
    private var peer: String?
    private var holding = false

    init(caps: ConnectionCaps) {
        self.caps = caps
    }

    func handlerAdded(context: ChannelHandlerContext) {
        peer = context.channel.remoteAddress?.ipAddress
        if caps.take(peer: peer) {
            holding = true
        } else {
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if holding {
            holding = false
            caps.give(peer: peer)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A connection past the caps is closing: nothing it sent is served.
        guard holding else { return }
        context.fireChannelRead(data)
    }
}
