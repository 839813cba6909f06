import CompressNIO
import HTTPTypes
import Hummingbird
import NIOCore
import RoboscopeWire
import Synchronization

/// Compresses answers for clients that say they accept it (`Accept-Encoding: gzip` or
/// `deflate`): JSON, CSV and the console's text assets of at least `minimumSize` bytes.
/// An answer of known length is compressed whole; a streamed one (the changes feed, an
/// audit export) stays streamed, each chunk compressed and flushed as it is written, so
/// a long poll's answer reaches the client when it is written, not at the end. Every
/// compressible answer says `Vary: Accept-Encoding`, compressed or not, so a cache never
/// hands one client's encoding to another.
struct ResponseCompressionMiddleware: APIMiddleware {

    /// Smaller answers cost more to compress than they save (a frame, a header).
    let minimumSize: Int

    func handle(_ request: Request, context: Context, next: Next) async throws -> Response {
        var response = try await next(request, context)
        guard Self.isCompressible(response) else { return response }
        response.headers.append(HTTPField(name: .vary, value: "Accept-Encoding"))
        guard request.method != .head,
            let coding = ContentCoding.preferred(accepting: request.headers[values: .acceptEncoding])
        else { return response }
        if let length = response.body.contentLength {
            guard length >= minimumSize else { return response }
            var whole = try await Self.collect(response.body)
            let compressed = try whole.compress(with: coding.algorithm)
            guard compressed.readableBytes < length else { return response }
            response.body = ResponseBody(byteBuffer: compressed)
            response.headers[.contentLength] = String(compressed.readableBytes)
        } else {
            let original = response.body
            response.body = ResponseBody { writer in
                let compressor = coding.algorithm.compressor
                try compressor.startStream()
                try await original.write(CompressingBodyWriter(inner: writer, compressor: compressor))
            }
            response.headers[.contentLength] = nil
        }
        response.headers[.contentEncoding] = coding.rawValue
        return response
    }

    static let compressibleTypes = [
        "application/json", "text/", "application/javascript", "image/svg+xml", "application/x-ndjson",
    ]

    static func isCompressible(_ response: Response) -> Bool {
        guard response.headers[.contentEncoding] == nil, response.status != .noContent, response.status != .notModified,
            let type = response.headers[.contentType]
        else { return false }
        return compressibleTypes.contains { HeaderText.hasPrefixIgnoringCase(type, $0) }
    }

    static func collect(_ body: ResponseBody) async throws -> ByteBuffer {
        let collector = CollectingBodyWriter()
        try await body.write(collector)
        return collector.buffer.withLock { $0 }
    }
}

/// Gathers a body written in parts (an answer of known length: bounded by it).
final class CollectingBodyWriter: ResponseBodyWriter, Sendable {
    let buffer = Mutex(ByteBuffer())

    func write(_ part: ByteBuffer) async throws {
        var part = part
        buffer.withLock { $0.writeBuffer(&part) }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

/// Compresses each part as it is written, with a sync flush (the part reaches the
/// client now), and the stream's end on `finish`.
struct CompressingBodyWriter: ResponseBodyWriter {
    var inner: any ResponseBodyWriter
    let compressor: NIOCompressor

    mutating func write(_ part: ByteBuffer) async throws {
        var part = part
        let compressed = try part.compressStream(with: compressor, flush: .sync)
        try await inner.write(compressed)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        var empty = ByteBuffer()
        let last = try empty.compressStream(with: compressor, flush: .finish)
        try compressor.finishStream()
        try await inner.write(last)
        try await inner.finish(trailingHeaders)
    }
}
