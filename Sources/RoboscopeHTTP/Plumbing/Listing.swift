import HTTPTypes
import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// Lists and topic-scoped reads: keyset pages with a `Link: <…>; rel="next"` header,
/// and the headers that join a snapshot to the live stream (docs/sync.md).
enum Listing {
    static let positionHeader = HTTPField.Name("Roboscope-Position")!
    static let topicSeqHeader = HTTPField.Name("Roboscope-Topic-Seq")!
    static let linkHeader = HTTPField.Name("Link")!

    /// `limit` (1-10,000, default 10,000) and `after` from the query.
    static func page(_ input: RequestInput) throws -> Page {
        Page(
            limit: Int(try input.queryInteger("limit", in: 1...Int64(Page.maxLimit)) ?? Int64(Page.maxLimit)),
            after: try input.queryID("after")
        )
    }

    /// The page to read: one more than asked, to know whether another page follows.
    static func probe(_ page: Page) -> Page {
        Page(limit: page.limit + 1, after: page.after)
    }

    /// A bare JSON array of at most `page.limit` items, with a link to the next page
    /// when `items` (read with `probe(page)`) holds more.
    static func response<T: JSONWritable & Sendable>(
        _ items: [T], page: Page, request: Request, id: (T) -> EntityID, status: HTTPResponse.Status = .ok
    ) -> Response {
        let shown = Array(items.prefix(page.limit))
        var response = StreamedArray.response(shown, status: status)
        if items.count > page.limit, let last = shown.last {
            response.headers[linkHeader] = "<\(nextURL(request, after: id(last)))>; rel=\"next\""
        }
        return response
    }

    /// The request's path and query with `after` set: a path-absolute reference, right
    /// behind any proxy that keeps paths.
    static func nextURL(_ request: Request, after: EntityID) -> String {
        let kept = (request.uri.query ?? "").split(separator: "&").filter { !$0.hasPrefix("after=") && !$0.isEmpty }
        return request.uri.path + "?" + (kept.map(String.init) + ["after=\(after)"]).joined(separator: "&")
    }

    /// Adds the snapshot's topic head.
    static func joined<T>(_ response: Response, _ snapshot: Snapshot<T>) -> Response {
        var response = response
        response.headers[positionHeader] = String(snapshot.head.position)
        response.headers[topicSeqHeader] = String(snapshot.head.topicSeq)
        return response
    }
}
