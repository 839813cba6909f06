import BlockingPool
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

    func list(_ request: Request, _ context: RoboscopeRequestContext) async throws -> Response {
        let input = RequestInput(request: request, context: context, bodyLimit: services.bodyLimit)
        guard let text = input.query("topic") else {
            throw DomainError(
                .malformedRequest, "query topic: required (work_session:<uuid> or space:<uuid>)", field: "topic")
        }
        guard let topic = Topic(text) else {
            throw DomainError(
                .malformedRequest, "query topic: expected work_session:<uuid> or space:<uuid>", field: "topic")
        }
        let since = try input.queryInteger("since", in: 0...Int64.max) ?? 0
        let limit = Int(
            try input.queryInteger("limit", in: Int64(Self.limits.lowerBound)...Int64(Self.limits.upperBound))
                ?? Int64(Self.defaultLimit))
        let wait = try input.queryNumber("wait", in: 0...Self.maxWait) ?? 0
        // Before the shared read-ahead: a page read ahead for one principal is never
        // handed to another that may not see its topic.
        try await services.gate.require(.read, on: topic, context, otherwise: Self.unknown(topic))
        let feed = services.changesFeed
        let readAhead = services.changesReadAhead
        let key = ChangesReadAhead.Key(topic: topic, since: since, limit: limit)
        // A poll takes its place before it reads: one past its subject's (or the process's)
        // cap is refused without costing a read, however a flood of them interleaves.
        let subject = RequestIdentity.keyOwner(context)
        let watch = wait > 0 ? services.changeWatch : nil
        let tenant = context.principal.tenant
        if let watch, let refusal = watch.admit(subject, tenant: tenant) { throw refusal }
        defer { watch?.leave(subject, tenant: tenant) }
        if let page = await readAhead.take(key) {
            services.budgets.charge(context, cost: Self.cost(bytes: page.messages.count))
            await Self.readAhead(after: page.last, of: key, feed: feed, into: readAhead)
            return Self.answer(page.messages, nextSince: page.last, hasMore: true)
        }
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int64(wait * 1000))
        // Events at hand are answered at once, on a connection the client keeps.
        let seen = services.changes?.current ?? 0
        let found = try await Self.read(key, feed: feed, readingAheadInto: readAhead)
        // A catch-up costs its size: a token for every 64 KiB beyond the request's own.
        services.budgets.charge(context, cost: Self.cost(bytes: found.messages.count))
        guard found.last == nil, let watch else {
            return Self.answer(found, since: since)
        }
        // The time it holds a connection is what a poll costs (docs/operations.md#rate-limit).
        defer { services.budgets.charge(context, cost: (ContinuousClock.now - started).secondsDouble) }
        // Nothing yet: the poll waits. A client that goes away ends it at once (the handler
        // is cancelled when the connection's inbound side closes), instead of holding it
        // until the time runs out. Hummingbird then closes the connection after the
        // answer, so the answer says so: a client that sent its next request on it would
        // find it closed.
        var response = try await request.body.consumeWithCancellationOnInboundClose { _ in
            var seen = seen
            while true {
                let remaining = deadline - ContinuousClock.now
                guard remaining > .zero else { return Self.answer(found, since: since) }
                let moved = await watch.wait(topic: topic, since: since, seen: seen, timeout: remaining)
                try Task.checkCancellation()
                seen = watch.signal.current
                guard moved else { continue }
                let arrived = try await Self.read(key, feed: feed, readingAheadInto: readAhead)
                if arrived.last != nil { return Self.answer(arrived, since: since) }
            }
        }
        response.headers[.connection] = "close"
        return response
    }

    static func cost(bytes: Int) -> Double {
        Double(bytes) / 65_536
    }

    static func unknown(_ topic: Topic) -> DomainError {
        DomainError(.notFound, "\(topic) has no events: no such work session or space", field: "topic")
    }

    /// The page of `key` read now, and the pages after it read ahead when it has more.
    static func read(
        _ key: ChangesReadAhead.Key, feed: ChangesFeed, readingAheadInto store: ChangesReadAhead
    ) async throws -> (messages: [UInt8], last: Int64?, hasMore: Bool) {
        guard let found = try await read(key, feed: feed) else {
            throw unknown(key.topic)
        }
        if found.hasMore, let last = found.last {
            await readAhead(after: last, of: key, feed: feed, into: store)
        }
        return found
    }

    /// The page of `key`, its messages rendered: nil for a topic without events.
    static func read(
        _ key: ChangesReadAhead.Key, feed: ChangesFeed
    ) async throws -> (messages: [UInt8], last: Int64?, hasMore: Bool)? {
        // A message is about 800 bytes (a marker with its details): room for the page up
        // front spares a catch-up's pages their growing copies and fresh pages of memory.
        let messages = JSONWriter(timestampStyle: .wire, capacity: key.limit * 1024)
        guard
            let (page, last, hasMore) = try await feed.page(
                key.topic, since: key.since, limit: key.limit, into: messages,
                adding: { [topic = key.topic] in try ServerMessage.write($1.change, topic: topic, to: &$0) }
            )
        else { return nil }
        return (page.bytes, last, hasMore)
    }

    /// Starts reading the pages that follow one ending at `last`, those a client catching
    /// up asks for next; each is kept only if it is final (full, more after it).
    static func readAhead(
        after last: Int64, of key: ChangesReadAhead.Key, feed: ChangesFeed, into store: ChangesReadAhead
    ) async {
        await store.readAhead(
            key.next(after: last),
            from: ChangesReadAhead.Source(
                read: { next in
                    guard let (messages, last, hasMore) = try? await read(next, feed: feed), hasMore, let last else {
                        return nil
                    }
                    return ChangesReadAhead.Page(messages: messages, last: last)
                },
                end: { next in try? await feed.pageEnd(next.topic, since: next.since, limit: next.limit) }
            ))
    }

    /// The answer of a page read after `since` (empty: `next_since` stays `since`).
    static func answer(_ found: (messages: [UInt8], last: Int64?, hasMore: Bool), since: Int64) -> Response {
        answer(found.messages, nextSince: found.last ?? since, hasMore: found.hasMore)
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
