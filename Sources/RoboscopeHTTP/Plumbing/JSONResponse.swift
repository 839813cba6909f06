import HTTPTypes
import Hummingbird
import NIOCore
import RoboscopeDomain
import RoboscopePostgres

/// Response bodies: snake_case keys, nullable fields present as `null`, timestamps in
/// the wire form (`2026-11-22T01:24:59Z`).
enum JSONResponse {
    static func make<T: JSONWritable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        let bytes = value.jsonBytes(.wire)
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }

    static func noContent() -> Response {
        Response(status: .noContent)
    }

    /// What a write answers, as stored under its idempotency key.
    static func answer<T: JSONWritable>(_ value: T, status: HTTPResponse.Status = .ok) -> StoredAnswer {
        StoredAnswer(status: status.code, body: value.jsonBytes(.wire))
    }

    static let noContentAnswer = StoredAnswer(status: 204, body: [])

    static func make(_ answer: StoredAnswer) -> Response {
        guard !answer.body.isEmpty else { return Response(status: HTTPResponse.Status(code: answer.status)) }
        return Response(
            status: HTTPResponse.Status(code: answer.status),
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: answer.body))
        )
    }
}
