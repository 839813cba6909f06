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
        let deadline = ContinuousClock.now + .milliseconds(Int64(wait * 1000))
        let poll = { @Sendable () async throws -> Response in
            while true {
                let seen = services.changes?.current ?? 0
                guard let (messages, last, hasMore) = try await feed.page(
                    topic, since: since, limit: limit, into: [UInt8](), adding: { try Self.add($1, on: topic, to: &$0) }
                ) else {
                    throw DomainError(.notFound, "\(topic) has no events: no such work session or space", field: "topic")
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

    /// Appends one event's message to the comma-separated messages of a page.
    static func add(_ delivery: Delivery, on topic: Topic, to messages: inout [UInt8]) throws {
        if !messages.isEmpty { messages.append(UInt8(ascii: ",")) }
        messages.append(contentsOf: try ServerMessage.change(delivery.change, topic: topic))
    }

    static func answer(_ messages: [UInt8], nextSince: Int64, hasMore: Bool) -> Response {
        var writer = JSONWriter(timestampStyle: .wire, capacity: messages.count + 64)
        writer.object { writer in
            writer.key("data"); writer.rawArray(elements: messages)
            writer.key("next_since"); writer.value(nextSince)
            writer.key("has_more"); writer.value(hasMore)
        }
        return JSONResponse.make(RawJSON(bytes: writer.bytes))
    }
}

/// JSON rendered already.
struct RawJSON: JSONWritable {
    let bytes: [UInt8]
    func writeJSON(to writer: inout JSONWriter) { writer.raw(bytes) }
}
