import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import RoboscopeDomain

/// Sits after the HTTP decoder. Answers what the decoder refuses with a status instead
/// of a silently closed socket (431 for a head over the limit, 400 for a malformed
/// one), and gives a request's body `requestTimeout` to arrive after its head (408),
/// so a client trickling its body cannot hold a connection and a task for ever.
final class RequestLimitsHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let requestTimeout: TimeAmount
    private var bodyDeadline: Scheduled<Void>?
    /// A response head already left for the current request: a refusal must not start a second one.
    private var responding = false

    init(requestTimeout: TimeAmount) {
        self.requestTimeout = requestTimeout
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            responding = false
            bodyDeadline?.cancel()
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            bodyDeadline = context.eventLoop.scheduleTask(in: requestTimeout) {
                let (handler, context) = loopBound.value
                handler.refuse(
                    .requestTimeout, "request_timeout", "the request body did not arrive within the request timeout",
                    context: context)
            }
        case .body:
            break
        case .end:
            bodyDeadline?.cancel()
            bodyDeadline = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head = unwrapOutboundIn(data) { responding = true }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        switch parserError {
        case .headerOverflow:
            refuse(
                .requestHeaderFieldsTooLarge, "headers_too_large", "the request head is larger than the server accepts",
                context: context)
        default:
            refuse(.badRequest, "bad_request", "malformed HTTP request (\(parserError))", context: context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        bodyDeadline?.cancel()
    }

    /// Answers with `status` and a JSON error, then closes: after a refusal the rest of
    /// the stream cannot be trusted to frame the next request.
    private func refuse(
        _ status: HTTPResponse.Status, _ code: String, _ message: String, context: ChannelHandlerContext
    ) {
        bodyDeadline?.cancel()
        bodyDeadline = nil
        guard context.channel.isActive else { return }
        guard !responding else {
            // The application's answer has begun; only closing is left.
            context.close(promise: nil)
            return
        }
        responding = true
        // The same body every error has (APIError), with a request id of its own: the
        // request never reached the router that would have given it one.
        let requestID = EntityID.random().description
        let body = ByteBuffer(bytes: APIError.body(DomainError(DomainError.Code(code), message), requestID: requestID))
        let head = HTTPResponse(
            status: status,
            headerFields: [
                .contentType: "application/json; charset=utf-8", .contentLength: "\(body.readableBytes)",
                .connection: "close",
                RequestIdentity.requestIDHeader: requestID,
            ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
