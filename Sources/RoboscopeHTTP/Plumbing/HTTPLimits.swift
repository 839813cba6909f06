import HummingbirdCore
import NIOCore

/// How much a client may send and how slowly: the server's side of the contract with
/// clients it does not trust.
public struct HTTPLimits: Sendable {
    /// Largest request body in bytes (413 above it).
    public var body: Int
    /// Largest request head (request line and headers) in bytes (431 above it).
    public var header: Int
    /// A connection must deliver a complete request head within this time of opening
    /// or of its previous response, else it is closed: this bounds both idle keep-alive
    /// connections and clients trickling their headers.
    public var idleTimeout: Duration
    /// A request's body must arrive within this time of its head (408 otherwise).
    public var requestTimeout: Duration
    /// Connections the port holds at once, in all and per client address.
    public var connections: ConnectionCaps
    /// A connection whose client takes none of its answer's bytes for this long is closed.
    public var sendTimeout: Duration
    /// Answers handed to the connections and not yet taken by their sockets.
    public var answers: AnswerMemory

    public init(
        body: Int = 1 << 20, header: Int = 16 << 10, idleTimeout: Duration = .seconds(30),
        requestTimeout: Duration = .seconds(60), connections: ConnectionCaps = ConnectionCaps(),
        sendTimeout: Duration = .seconds(30), answers: AnswerMemory = AnswerMemory()
    ) {
        self.body = body
        self.header = header
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.connections = connections
        self.sendTimeout = sendTimeout
        self.answers = answers
    }

    /// The HTTP/1.1 server with these limits in its pipeline.
    var server: HTTPServerBuilder {
        .http1(
            configuration: .init(
                additionalChannelHandlers: [
                    ConnectionCapHandler(caps: connections),
                    RequestLimitsHandler(requestTimeout: TimeAmount(requestTimeout)),
                    AnswerDrainHandler(memory: answers, sendTimeout: TimeAmount(sendTimeout)),
                ],
                idleTimeout: TimeAmount(idleTimeout),
                httpDecoderConfiguration: .init(maxHeaderFieldSize: header, maxHeaderListSize: header)
            ))
    }
}
