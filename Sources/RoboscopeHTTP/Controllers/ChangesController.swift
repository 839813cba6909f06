import Hummingbird
import RoboscopeDomain
import RoboscopePostgres

/// `GET /changes?topic=&since=&limit=&wait=`: a topic's events after `since`, each exactly
/// as the WebSocket sends it, for clients catching up after a long time offline
/// (docs/sync.md). With `wait`, an empty answer is held until an event arrives or the
/// time runs out, without holding a database connection meanwhile.
struct ChangesController {
    let services: APIServices
    static let limits = 1...1000
    static let defaultLimit = 500
    static let maxWait = 30.0

    func addRoutes(to group: RouterGroup<RoboscopeRequestContext>) {
        group.get("changes", use: list)
    }

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        guard let text = input.query("topic") else {
            throw DomainError(.malformedRequest, "query topic: required (work_session:<uuid> or space:<uuid>)", field: "topic")
        }
        guard let topic = Topic(text) else {
            throw DomainError(.malformedRequest, "query topic: expected work_session:<uuid> or space:<uuid>", field: "topic")
        }
        let since = try input.queryInteger("since", in: 0...Int64.max) ?? 0
        let limit = Int(try input.queryInteger("limit", in: Int64(Self.limits.lowerBound)...Int64(Self.limits.upperBound)) ?? Int64(Self.defaultLimit))
        let wait = try input.queryNumber("wait", in: 0...Self.maxWait) ?? 0
        let feed = ChangesFeed(pool: services.store.pool)
        let readAhead = services.changesReadAhead
        let deadline = ContinuousClock.now + .milliseconds(Int64(wait * 1000))
        let poll = { @Sendable () async throws -> Response in
            let key = ChangesReadAhead.Key(topic: topic, since: since, limit: limit)
            if let page = await readAhead.take(key) {
                await Self.readAhead(after: page.last, of: key, feed: feed, into: readAhead)
                return Self.answer(page.messages, nextSince: page.last, hasMore: true)
            }
            while true {
                let seen = services.changes?.current ?? 0
                guard let (messages, last, hasMore) = try await Self.read(key, feed: feed) else {
                    throw DomainError(.notFound, "\(topic) has no events: no such work session or space", field: "topic")
                }
                if hasMore, let last {
                    await Self.readAhead(after: last, of: key, feed: feed, into: readAhead)
                }
                let remaining = deadline - ContinuousClock.now
                guard last == nil, remaining > .zero, let changes = services.changes else {
                    return Self.answer(messages, nextSince: last ?? since, hasMore: hasMore)
                }
                await changes.wait(past: seen, timeout: remaining)
                try Task.checkCancellation()
            }
        }
        guard wait > 0 else { return try await poll() }
        // A client that goes away ends its poll at once (the handler is cancelled when the
        // connection's inbound side closes), instead of holding it until the time runs out.
        return try await request.body.consumeWithCancellationOnInboundClose { _ in try await poll() }
    }

    /// The page of `key`, its messages rendered: nil for a topic without events.
    static func read(_ key: ChangesReadAhead.Key, feed: ChangesFeed) async throws -> (messages: [UInt8], last: Int64?, hasMore: Bool)? {
        // A message is about 800 bytes (a marker with its details): room for the page up
        // front spares a catch-up's pages their growing copies and fresh pages of memory.
        let messages = JSONWriter(timestampStyle: .wire, capacity: key.limit * 1024)
        guard let (page, last, hasMore) = try await feed.page(
            key.topic, since: key.since, limit: key.limit, into: messages,
            adding: { [topic = key.topic] in try ServerMessage.write($1.change, topic: topic, to: &$0) }
        ) else { return nil }
        return (page.bytes, last, hasMore)
    }

    /// Starts reading the pages that follow one ending at `last`, those a client catching
    /// up asks for next; each is kept only if it is final (full, more after it).
    static func readAhead(after last: Int64, of key: ChangesReadAhead.Key, feed: ChangesFeed, into store: ChangesReadAhead) async {
        await store.readAhead(key.next(after: last)) { next in
            guard let (messages, last, hasMore) = try? await read(next, feed: feed), hasMore, let last else { return nil }
            return ChangesReadAhead.Page(messages: messages, last: last)
        }
    }

    /// `{"data":[…],"next_since":…,"has_more":…}`, the messages copied once, into the body.
    static func answer(_ messages: [UInt8], nextSince: Int64, hasMore: Bool) -> Response {
        var tail = JSONWriter(timestampStyle: .wire, capacity: 64)
        tail.value(nextSince)
        var body = ByteBuffer()
        body.reserveCapacity(messages.count + 64)
        body.writeString(#"{"data":["#)
        body.writeBytes(messages)
        body.writeString(#"],"next_since":"#)
        body.writeBytes(tail.bytes)
        body.writeString(hasMore ? #","has_more":true}"# : #","has_more":false}"#)
        return Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: body)
        )
    }
}
