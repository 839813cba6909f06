import Hummingbird
import NIOCore
import RoboscopeDomain
import Testing
@testable import RoboscopeHTTP

/// Answers over a MiB rendered as they are sent (issue 45): the bytes are those of the
/// whole rendering, a small answer keeps its length, a large one has none.
@Suite struct StreamedArrayTests {
    struct Item: JSONWritable, Sendable {
        let number: Int
        func writeJSON(to writer: inout JSONWriter) {
            writer.object { writer in
                writer.key("n"); writer.value(Int64(number))
                writer.key("pad"); writer.value(String(repeating: "x", count: 500))
            }
        }
    }

    static func body(_ response: Response) async throws -> [UInt8] {
        Array(try await ResponseCompressionMiddleware.collect(response.body).readableBytesView)
    }

    @Test func aSmallArrayIsSentWholeWithItsLength() async throws {
        let items = (0..<10).map(Item.init)
        let response = StreamedArray.response(items)
        #expect(response.body.contentLength == items.jsonBytes(.wire).count)
        #expect(try await Self.body(response) == items.jsonBytes(.wire))
        #expect(try await Self.body(StreamedArray.response([Item]())) == Array("[]".utf8))
    }

    @Test func aLargeArrayIsStreamedAsTheSameBytes() async throws {
        let items = (0..<5000).map(Item.init)
        let response = StreamedArray.response(items)
        #expect(response.body.contentLength == nil, "2.6 MB: streamed")
        #expect(try await Self.body(response) == items.jsonBytes(.wire))
    }

    @Test func anEnvelopeWrapsTheItems() async throws {
        let items = (0..<5000).map(Item.init)
        let response = StreamedArray.response(items, prefix: #"{"data":["#, suffix: Array(#"],"next":7}"#.utf8))
        var expected = JSONWriter(timestampStyle: .wire)
        expected.object { writer in
            writer.key("data"); writer.array(items) { $0.value($1) }
            writer.key("next"); writer.value(Int64(7))
        }
        #expect(try await Self.body(response) == expected.bytes)
        let page = AuditPage(entries: [], nextAfter: 5, nextBefore: nil)
        #expect(try await Self.body(AuditController.answer(page)) == page.jsonBytes(.wire))
    }
}
