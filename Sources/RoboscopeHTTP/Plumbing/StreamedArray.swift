import HTTPTypes
import Hummingbird
import NIOCore
import RoboscopeDomain

/// A JSON array answer rendered as the socket drains once it passes `streamAbove`: the
/// first MiB is rendered at once (most answers end there, sent whole with their
/// length); the rest goes in chunks of about `chunk` bytes, each rendered when the
/// connection takes the one before (Hummingbird's body writer waits for the socket), so
/// a page of 10,000 markers never sits in memory as 6.5 MB of JSON (issue 45, DESIGN
/// "Memory for answers is bounded").
enum StreamedArray {
    static let streamAbove = 1 << 20
    static let chunk = 64 << 10

    /// `prefix` and `suffix` wrap the items: `[` and `]` for a bare array, or an
    /// envelope's (`{"data":[` ... `],"next_after":…}`).
    static func response<T: JSONWritable & Sendable>(
        _ items: [T], status: HTTPResponse.Status = .ok, prefix: String = "[", suffix: [UInt8] = Array("]".utf8)
    ) -> Response {
        var head = ByteBuffer(string: prefix)
        var next = 0
        while next < items.count, head.readableBytes < streamAbove {
            next = render(items, from: next, into: &head)
        }
        let headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if next == items.count {
            head.writeBytes(suffix)
            return Response(status: status, headers: headers, body: .init(byteBuffer: head))
        }
        let first = head
        let rest = next
        return Response(
            status: status, headers: headers,
            body: ResponseBody { writer in
                try await writer.write(first)
                var index = rest
                while index < items.count {
                    var part = ByteBuffer()
                    part.reserveCapacity(chunk + 4096)
                    index = render(items, from: index, into: &part)
                    try await writer.write(part)
                }
                try await writer.write(ByteBuffer(bytes: suffix))
                try await writer.finish(nil)
            })
    }

    /// Renders items from `start` until about `chunk` bytes are written; returns the next
    /// item's index. Items after the array's first are preceded by a comma.
    static func render<T: JSONWritable>(_ items: [T], from start: Int, into buffer: inout ByteBuffer) -> Int {
        var writer = JSONWriter(timestampStyle: .wire, capacity: chunk + 4096)
        var index = start
        while index < items.count, writer.bytes.count < chunk {
            items[index].writeJSON(to: &writer)
            index += 1
        }
        if start > 0 { buffer.writeString(",") }
        buffer.writeBytes(writer.bytes)
        return index
    }
}
