import CompressNIO
import HTTPTypes
import Hummingbird
import NIOCore
import RoboscopeDomain

/// Accepts request bodies sent with `Content-Encoding: gzip` or `deflate` (the kit's
/// bulk uploads): the body is inflated before anything reads it, and the body limit
/// applies to the inflated size, so a small bomb is refused (413) after at most the
/// limit's worth of memory; a corrupt stream is 400, another coding 415.
struct RequestDecompressionMiddleware: APIMiddleware {

    let bodyLimit: Int

    func handle(_ request: Request, context: Context, next: Next) async throws -> Response {
        guard let header = request.headers[.contentEncoding] else { return try await next(request, context) }
        let coding: ContentCoding
        switch ContentCoding.of(body: header) {
        case .success(nil): return try await next(request, context)
        case .success(let known?): coding = known
        case .failure(let unknown):
            throw DomainError(
                .unsupportedMediaType,
                "Content-Encoding \(String(unknown.name.prefix(40))) is not accepted; send gzip, deflate or identity",
                field: "Content-Encoding")
        }
        var compressed = try await RequestInput(request: request, context: context, bodyLimit: bodyLimit).bodyBuffer()
        let inflated: ByteBuffer
        do {
            // One byte past the limit tells "exactly the limit" from "more".
            inflated = try compressed.decompress(with: coding.algorithm, maxSize: bodyLimit + 1)
        } catch let error as CompressNIOError where error == .bufferOverflow {
            throw Self.tooLarge(bodyLimit)
        } catch {
            throw DomainError(
                .malformedRequest, "the body is not a valid \(coding.rawValue) stream (Content-Encoding)",
                field: "Content-Encoding")
        }
        guard inflated.readableBytes <= bodyLimit else { throw Self.tooLarge(bodyLimit) }
        // The head stays as sent (Hummingbird's is read-only): nothing after this reads
        // Content-Encoding or Content-Length, only the body.
        var request = request
        request.body = RequestBody(buffer: inflated)
        return try await next(request, context)
    }

    static func tooLarge(_ limit: Int) -> DomainError {
        DomainError(
            .payloadTooLarge, "the body, inflated, is larger than \(limit) bytes",
            details: ["limit": .integer(Int64(limit))])
    }
}
