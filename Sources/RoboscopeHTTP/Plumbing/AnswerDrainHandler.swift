#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOHTTPTypes

/// Sits after the HTTP encoder's input: hands an answer's body to the socket in slices
/// of at most `AnswerMemory.largeAnswer` bytes, counts the bytes not yet taken by the
/// socket against the process's `AnswerMemory`, and closes the connection when its
/// client has taken nothing for `sendTimeout` while bytes wait (nginx's `send_timeout`):
/// a client that never reads holds its answer's memory for that long, no longer.
final class AnswerDrainHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let memory: AnswerMemory
    private let sendTimeout: TimeAmount
    /// Bytes written on this connection and not yet taken by its socket.
    private var pending = 0
    private var lastProgress = NIODeadline.distantPast
    private var check: Scheduled<Void>?

    init(memory: AnswerMemory, sendTimeout: TimeAmount) {
        self.memory = memory
        self.sendTimeout = sendTimeout
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .body(var buffer) = unwrapOutboundIn(data), buffer.readableBytes > 0 else {
            context.write(data, promise: promise)
            return
        }
        while buffer.readableBytes > AnswerMemory.largeAnswer {
            let slice = buffer.readSlice(length: AnswerMemory.largeAnswer)!
            send(slice, context: context, promise: nil)
        }
        send(buffer, context: context, promise: promise)
    }

    private func send(_ slice: ByteBuffer, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        let bytes = slice.readableBytes
        if pending == 0 {
            lastProgress = context.eventLoop.now
            scheduleCheck(context: context)
        }
        pending += bytes
        memory.hold(bytes)
        let written = promise ?? context.eventLoop.makePromise()
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let loop = context.eventLoop
        written.futureResult.whenComplete { _ in
            let handler = loopBound.value
            handler.pending -= bytes
            handler.lastProgress = loop.now
            handler.memory.release(bytes)
        }
        context.write(wrapOutboundOut(.body(slice)), promise: written)
    }

    /// Closes the connection if its socket took nothing for `sendTimeout` with bytes
    /// waiting; checks again at the next such deadline otherwise.
    private func scheduleCheck(context: ChannelHandlerContext) {
        guard check == nil else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        check = context.eventLoop.scheduleTask(deadline: lastProgress + sendTimeout) {
            let (handler, context) = loopBound.value
            handler.check = nil
            guard handler.pending > 0 else { return }
            if context.eventLoop.now - handler.lastProgress >= handler.sendTimeout {
                handler.memory.countCut()
                // Reset, not a graceful close: the kernel drops what its buffer still
                // holds for this client at once, instead of keeping it for the retries.
                if let socket = context.channel as? any SocketOptionProvider {
                    socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in
                        context.close(promise: nil)
                    }
                } else {
                    context.close(promise: nil)
                }
            } else {
                handler.scheduleCheck(context: context)
            }
        }
    }

    /// The kernel's send buffer for the connection, which the kernel doubles: without a
    /// bound, loopback and fast links grow it to 4 MiB, memory outside this budget that
    /// also hides a client's progress (the socket is writable again only once half of it
    /// has drained). 512 KiB still fills a 40 Mbit/s link at 100 ms.
    static let socketSendBuffer = 256 << 10

    func handlerAdded(context: ChannelHandlerContext) {
        let size = SocketOptionValue(Self.socketSendBuffer)
        _ = context.channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: size)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
    }
}
