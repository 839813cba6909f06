import Foundation

/// How a live topic's connection stands.
public enum ConnectionState: Hashable, Sendable {
    /// Opening the WebSocket and subscribing.
    case connecting
    /// Subscribed: events arrive as they happen.
    case live
    /// Fetching missed events from the changes feed (a gap, or too far behind).
    case catchingUp
    /// The connection failed or dropped; the next attempt comes after `delay`.
    case waitingToRetry(delay: Duration)
    /// The last attempt could not reach the service.
    case offline
}

/// A followed topic: its events, in order, each once, for as long as the consuming task
/// runs; how the connection stands; and who is present (work session topics).
public struct LiveTopic: Sendable {
    public let topic: Topic
    /// Every event of the topic after the starting cursor, in topic order, none twice,
    /// none missing (a jump in `topic_seq` is filled from the changes feed). Ends only
    /// when the consumer stops iterating (cancel its task) or the topic does not exist.
    public let events: AsyncThrowingStream<TopicEvent, any Error>
    public let states: AsyncStream<ConnectionState>
    /// The users present, whenever the list changes (`work_session` topics).
    public let presence: AsyncStream<[String]>
    /// The coarse state for a UI: true once live, false once a try failed; each change
    /// once (a retry's `connecting`, `offline` and `waitingToRetry` are one `false`).
    public let online: AsyncStream<Bool>
    /// Each time the server refused the connection's token (a 401 upgrade, a close with
    /// 4001 or 4003): `unauthorized` or `forbidden`, with the server's reason. The topic
    /// goes on retrying (a refreshed token may be accepted); the app decides when to stop.
    public let refusals: AsyncStream<RoboscopeError>
}

extension ConnectionState {
    /// Whether events arrive as they happen (`live`, or catching up while connected).
    public var isOnline: Bool {
        switch self {
        case .live, .catchingUp: return true
        case .connecting, .waitingToRetry, .offline: return false
        }
    }
}

extension RoboscopeClient {
    /// Follows `topic` from `cursor` (default: from now on): connects, subscribes with
    /// `since`, reconnects with backoff and jitter, resumes without gap or duplicate,
    /// checks `topic_seq` and fills a jump from the changes feed, and falls back to the
    /// feed when the gateway says the client is too far behind. Nothing to unsubscribe:
    /// cancel the task that iterates `events`.
    public func follow(_ topic: Topic, from cursor: TopicCursor = TopicCursor()) -> LiveTopic {
        let (events, eventsContinuation) = AsyncThrowingStream<TopicEvent, any Error>.makeStream(
            bufferingPolicy: .unbounded)
        let (states, statesContinuation) = AsyncStream<ConnectionState>.makeStream(
            bufferingPolicy: .bufferingNewest(16))
        let (presence, presenceContinuation) = AsyncStream<[String]>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (online, onlineContinuation) = AsyncStream<Bool>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (refusals, refusalsContinuation) = AsyncStream<RoboscopeError>.makeStream(
            bufferingPolicy: .bufferingNewest(16))
        let follower = TopicFollower(
            client: self, topic: topic, cursor: cursor,
            output: TopicFollower.Output(
                events: eventsContinuation, states: statesContinuation, presence: presenceContinuation,
                online: onlineContinuation, refusals: refusalsContinuation)
        )
        let task = Task { await follower.run() }
        eventsContinuation.onTermination = { _ in task.cancel() }
        return LiveTopic(
            topic: topic, events: events, states: states, presence: presence, online: online, refusals: refusals)
    }

    /// The events of `topic` from `cursor` on (see `follow`).
    public func events(
        on topic: Topic, from cursor: TopicCursor = TopicCursor()
    ) -> AsyncThrowingStream<TopicEvent, any Error> {
        follow(topic, from: cursor).events
    }
}

/// Runs one followed topic: the connection loop around a `TopicCursor`.
actor TopicFollower {
    struct Output: Sendable {
        let events: AsyncThrowingStream<TopicEvent, any Error>.Continuation
        let states: AsyncStream<ConnectionState>.Continuation
        let presence: AsyncStream<[String]>.Continuation
        let online: AsyncStream<Bool>.Continuation
        let refusals: AsyncStream<RoboscopeError>.Continuation
    }

    let client: RoboscopeClient
    let topic: Topic
    var cursor: TopicCursor
    let output: Output
    private var random = SystemRandomNumberGenerator()
    /// The coarse state last reported (nil before the first).
    private var reportedOnline: Bool?

    init(client: RoboscopeClient, topic: Topic, cursor: TopicCursor, output: Output) {
        self.client = client
        self.topic = topic
        self.cursor = cursor
        self.output = output
    }

    /// What ended one connection.
    enum Ending: Error {
        /// Lost or refused: wait, then reconnect.
        case dropped
        /// The gateway will not replay that far: catch up from the feed, then reconnect.
        case tooFarBehind
        /// The topic does not exist: the stream ends with this error.
        case fatal(RoboscopeError)
    }

    func run() async {
        var failures = 0
        defer {
            output.states.finish()
            output.presence.finish()
            output.online.finish()
            output.refusals.finish()
        }
        while !Task.isCancelled {
            // Read before the try: a `reconnectNow()` while it runs ends the wait after it.
            let network = client.networkGeneration
            output.states.yield(.connecting)
            do {
                try await connectOnce(onLive: { failures = 0 })
            } catch Ending.tooFarBehind {
                do {
                    try await catchUpFromFeed()
                    continue
                } catch {
                    // The feed failed too: wait like any dropped connection.
                }
            } catch Ending.fatal(let error) {
                output.events.finish(throwing: error)
                return
            } catch let error as RoboscopeError where error.isTokenRefusal {
                output.refusals.yield(error)
                // A refused token is not offered again: the provider is asked for another.
                await client.configuration.tokenProvider?.invalidate()
            } catch {
                // Dropped, refused or unreachable: fall through to the wait.
            }
            if Task.isCancelled { break }
            failures += 1
            state(.offline)
            let delay = client.configuration.reconnect.delay(forRetry: failures, using: &random)
            state(.waitingToRetry(delay: delay))
            do { try await client.backOff(delay, unlessReconnectAfter: network) } catch { break }
        }
        output.events.finish()
    }

    /// Reports a detailed state, and the coarse one when it changes.
    private func state(_ state: ConnectionState) {
        output.states.yield(state)
        let online: Bool
        switch state {
        case .live: online = true
        case .offline: online = false
        default: return
        }
        if reportedOnline != online {
            reportedOnline = online
            output.online.yield(online)
        }
    }

    private func connectOnce(onLive: () -> Void) async throws {
        let url = try await client.webSocketURL()
        var headers = ["User-Agent": client.configuration.userAgent]
        if let provider = client.configuration.tokenProvider {
            headers["Authorization"] = "Bearer \(try await provider.token())"
        }
        let connection = try await client.configuration.webSocket.connect(to: url, headers: headers)
        let refresher = headers["Authorization"].flatMap {
            refreshTokens(on: connection, from: String($0.dropFirst("Bearer ".count)))
        }
        defer { refresher?.cancel() }
        // The connection ends with this function, however it ends; a cancelled consumer
        // closes it at once (a pending receive then throws).
        do {
            try await withTaskCancellationHandler {
                try await follow(on: connection, onLive: onLive)
            } onCancel: {
                Task { await connection.close() }
            }
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
    }

    /// Keeps the connection's token fresh without reconnecting: after 80 % of its
    /// lifetime, a fresh token from the provider goes out in an `auth` op. Stops when the
    /// provider cannot give a newer token (the server closes with 4001 at expiry, and the
    /// reconnect asks the provider again).
    private nonisolated func refreshTokens(
        on connection: any WebSocketConnection, from token: String
    ) -> Task<Void, Never>? {
        guard let provider = client.configuration.tokenProvider, var expiry = TokenExpiry.of(token) else { return nil }
        let clock = client.configuration.clock
        return Task {
            var current = token
            while !Task.isCancelled {
                let now = await clock.now()
                guard expiry > now else { return }
                do { try await clock.sleep(for: TokenExpiry.refreshDelay(expiry: expiry, now: now)) } catch { return }
                guard let fresh = try? await provider.freshToken(), fresh != current, let next = TokenExpiry.of(fresh),
                    next > expiry
                else {
                    return
                }
                let message = JSONValue.object(["op": .string(WireOp.auth.rawValue), "token": .string(fresh)])
                guard let text = try? String(decoding: WireCoding.encoder().encode(message), as: UTF8.self),
                    (try? await connection.send(text)) != nil
                else { return }
                current = fresh
                expiry = next
            }
        }
    }

    private func follow(on connection: any WebSocketConnection, onLive: () -> Void) async throws {
        // Presence as joins and leaves after one full list: a big session's every change
        // is a small message, not the whole list again.
        var subscribe: [String: JSONValue] = [
            "op": .string(WireOp.subscribe.rawValue), "topic": .string(topic.description), "presence": "changes",
        ]
        var present: [String] = []
        if cursor.position > 0 || cursor.topicSeq != nil { subscribe["since"] = .integer(cursor.position) }
        try await connection.send(
            String(decoding: try WireCoding.encoder().encode(JSONValue.object(subscribe)), as: UTF8.self))
        while !Task.isCancelled {
            let text = try await connection.receive()
            guard let message = try? WireCoding.decoder().decode(JSONValue.self, from: Data(text.utf8)),
                let op = message["op"]?.stringValue.flatMap(WireOp.init(rawValue:))
            else {
                // Unreadable: skip it; should it have been an event, the jump in
                // topic_seq that follows is filled from the feed.
                continue
            }
            switch op {
            case .subscribed:
                cursor.start(
                    position: message["position"]?.integerValue ?? cursor.position,
                    topicSeq: message["topic_seq"]?.integerValue)
                onLive()
                state(.live)
            case .event, .lock:
                guard var event = try? WireCoding.decoder().decode(TopicEvent.self, from: Data(text.utf8)) else {
                    continue
                }
                event.raw = text
                try await receive(event)
            case .authenticated:
                continue
            case .unsubscribed where message["reason"]?.stringValue == ErrorCode.forbidden.rawValue:
                // A refreshed token no longer covers the topic.
                throw Ending.fatal(.forbidden(scopeNeeded: nil, message: "the token no longer covers \(topic)"))
            case .presence:
                func names(_ key: String) -> [String]? {
                    if case .array(let items)? = message[key] {
                        return items.compactMap(\.stringValue)
                    } else {
                        return nil
                    }
                }
                if let users = names("users") {
                    present = users
                } else {
                    let left = Set(names("left") ?? [])
                    present.removeAll { left.contains($0) }
                    for user in names("joined") ?? [] where !present.contains(user) { present.append(user) }
                }
                output.presence.yield(present)
            case .error:
                switch ErrorCode(message["code"]?.stringValue ?? "") {
                case .tooFarBehind: throw Ending.tooFarBehind
                case .notFound:
                    throw Ending.fatal(.notFound(message: message["message"]?.stringValue ?? "\(topic) not found"))
                case .unauthorized: throw Ending.fatal(.unauthorized(message: message["message"]?.stringValue ?? ""))
                case .forbidden:
                    throw Ending.fatal(
                        .forbidden(
                            scopeNeeded: message["scope_needed"]?.stringValue,
                            message: message["message"]?.stringValue ?? ""))
                case .invalidField, .malformedRequest:
                    throw Ending.fatal(
                        .badRequest(
                            field: message["field"]?.stringValue, message: message["message"]?.stringValue ?? ""))
                default: throw Ending.dropped
                }
            default:
                continue
            }
        }
    }

    /// Hands on the next event, drops what the client has, fills a gap from the feed.
    private func receive(_ event: TopicEvent) async throws {
        switch cursor.judge(position: event.position, topicSeq: event.topicSeq) {
        case .seen:
            return
        case .next:
            deliver(event)
        case .gap:
            output.states.yield(.catchingUp)
            try await fill(until: event)
            if case .next = cursor.judge(position: event.position, topicSeq: event.topicSeq) { deliver(event) }
            state(.live)
        }
    }

    private func deliver(_ event: TopicEvent) {
        cursor.advance(position: event.position, topicSeq: event.topicSeq)
        output.events.yield(event)
    }

    /// Fetches the feed after the cursor until `event`'s place is reached.
    private func fill(until event: TopicEvent) async throws {
        while cursor.position < event.position {
            let page = try await client.changes(topic, since: cursor.position, limit: 1000)
            for missed in page.data where missed.position < event.position {
                if case .next = cursor.judge(position: missed.position, topicSeq: missed.topicSeq) { deliver(missed) }
            }
            if !page.hasMore || page.data.isEmpty || page.data.contains(where: { $0.position >= event.position }) {
                return
            }
        }
    }

    /// Pages through the feed to its end (a client too far behind for the gateway).
    private func catchUpFromFeed() async throws {
        output.states.yield(.catchingUp)
        while !Task.isCancelled {
            let page = try await client.changes(topic, since: cursor.position, limit: 1000)
            for event in page.data {
                switch cursor.judge(position: event.position, topicSeq: event.topicSeq) {
                case .next, .gap: deliver(event)
                case .seen: continue
                }
            }
            if !page.hasMore { return }
        }
    }
}
