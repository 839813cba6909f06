import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Encodes response bodies: snake_case keys come from the entities' coding keys,
/// timestamps in the wire form (`2026-11-22T01:24:59Z`).
enum JSONResponse {
    static func make<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let data = try encoder.encode(value)
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }

    static func noContent() -> Response {
        Response(status: .noContent)
    }
}
