import Foundation
@_spi(Testing) import RoboscopeKit

/// A stand-in for the service, in memory, for tests of code built on the kit: it answers
/// the REST calls of markers and the changes feed, runs the WebSocket protocol, keeps
/// idempotency keys, and misbehaves on command: it fails requests, becomes unreachable,
/// drops, duplicates and reorders live events, disconnects, and tells clients they are
/// too far behind. Plug `http` and `webSocket` into a `RoboscopeConfiguration`.
public actor InMemoryService {
    struct StoredEvent {
        var position: Int64
        var topicSeq: Int64
        var text: String
    }

    private var position: Int64 = 0
    private var topics: [String: [StoredEvent]] = [:]
    private var markers: [UUID: Marker] = [:]
    private var sessions: [UUID: WorkSession] = [:]
    private var answers: [String: HTTPResponseData] = [:]
    private var locks: [UUID: (token: String, holder: String, fencing: Int64)] = [:]
    private var fencing: Int64 = 0
    /// Heartbeats received, in order (work session, user); leaves are not in it.
    public private(set) var heartbeats: [(workSessionID: UUID, user: String)] = []
    /// Users who left (DELETE), in order.
    public private(set) var leaves: [(workSessionID: UUID, user: String)] = []
    private var connections: [UInt64: InMemoryWebSocketConnection] = [:]
    /// The topics each connection subscribed to, by connection id.
    private var subscribed: [UInt64: Set<String>] = [:]
    private var nextConnection: UInt64 = 0
    private let epoch = Date(timeIntervalSince1970: 1_795_000_000)

    // Faults, consumed as they happen.
    private var failures: [Int] = []
    private var dropLive = 0
    private var duplicateLive = 0
    private var holdForReorder = false
    private var held: [(String, StoredEvent)] = []
    /// Unreachable: HTTP and WebSocket connects fail as a lost network does.
    public private(set) var reachable = true
    /// A subscription whose `since` is more than this many events behind is refused.
    public private(set) var catchUpLimit: Int? = nil

    private var interleaving: (generator: SplitMix64, maxYields: Int)?

    /// Seeded interleavings: each HTTP request and each WebSocket message received
    /// yields its task up to `maxYields` times (a number the seed draws) before and
    /// after it is handled, so the kit's concurrent parts (send loop, follower,
    /// `synchronized()`) meet in an order the seed picks. Run a test over many seeds.
    public func interleave(seed: UInt64, maxYields: Int = 8) {
        interleaving = (SplitMix64(seed: seed), maxYields)
    }

    /// How many times the caller should yield now (0 without `interleave`).
    func yields() -> Int {
        guard var current = interleaving else { return 0 }
        let count = Int(current.generator.next() % UInt64(current.maxYields + 1))
        interleaving = current
        return count
    }

    nonisolated func yieldAsSeeded() async {
        for _ in 0..<(await yields()) { await Task.yield() }
    }

    /// Refuses subscriptions more than `limit` events behind (`too_far_behind`); nil: never.
    public func setCatchUpLimit(_ limit: Int?) { catchUpLimit = limit }
    /// Every HTTP request that reached the service, in order.
    public private(set) var requests: [HTTPRequestData] = []
    /// Subscriptions received (topic and `since`), in order.
    public private(set) var subscriptions: [(topic: String, since: Int64?)] = []
    /// Bearer tokens received over WebSocket, in order: at an upgrade (`upgrade: true`)
    /// or in an `auth` op on an open connection.
    public private(set) var webSocketTokens: [(token: String, upgrade: Bool)] = []
    /// WebSocket connections opened so far.
    public private(set) var webSocketConnects = 0

    /// An empty service: add work sessions with `addWorkSession`.
    public init() {}

    public nonisolated var http: any HTTPTransport { InMemoryHTTPTransport(service: self) }
    public nonisolated var webSocket: any WebSocketTransport { InMemoryWebSocketTransport(service: self) }

    // MARK: Commands

    /// The next `count` HTTP requests answer `status` (503 by default) without effect.
    public func fail(next count: Int, status: Int = 503) {
        failures += Array(repeating: status, count: count)
    }

    /// Network loss: requests and connects fail, open connections drop.
    public func setReachable(_ value: Bool) {
        reachable = value
        if !value { disconnectAll() }
    }

    /// The next `count` live events are not delivered over WebSocket (they stay in the feed).
    public func dropLive(next count: Int) { dropLive += count }
    /// The next `count` live events are delivered twice.
    public func duplicateLive(next count: Int) { duplicateLive += count }
    /// The next two live events are delivered in swapped order.
    public func reorderNextTwo() { holdForReorder = true }

    /// Closes every WebSocket connection, as a dying gateway does.
    public func disconnectAll() {
        for connection in connections.values { connection.end() }
        connections = [:]
    }

    public var openConnections: Int { connections.count }

    /// Sends `text` as it is to every open connection (a malformed or unknown message).
    public func pushRaw(_ text: String) {
        for connection in connections.values { connection.push(text) }
    }

    // MARK: Seeding and inspection

    /// A work session to work in (its `work_session.created` event is on its topic).
    @discardableResult
    public func addWorkSession(_ id: UUID = UUID(), spaceID: UUID = UUID()) -> WorkSession {
        let session = WorkSession(
            id: id, spaceID: spaceID, sessionType: .inspection, status: .active, startedAt: epoch,
            completedAt: nil, version: 1, meta: [:], createdAt: epoch, updatedAt: epoch)
        sessions[id] = session
        publish(
            .workSession(id), type: .workSessionCreated, streamType: .workSession, id: id, version: 1,
            actor: "seed", key: nil, data: Self.json(session))
        return session
    }

    /// Another device's write: a marker created in `session`.
    @discardableResult
    public func externalCreate(in session: UUID, label: String? = nil, actor: String = "other") -> Marker {
        createMarker(
            NewMarker(
                workSessionID: session, label: label, p1: Self.unitQuad[0], p2: Self.unitQuad[1], p3: Self.unitQuad[2],
                p4: Self.unitQuad[3]), actor: actor, key: nil)
    }

    /// Another device's write: a marker relabelled.
    public func externalUpdate(_ id: UUID, label: String, actor: String = "other") {
        guard var marker = markers[id] else { return }
        marker.label = label
        marker.version += 1
        markers[id] = marker
        publish(
            .workSession(marker.workSessionID), type: .markerUpdated, streamType: .marker, id: id,
            version: marker.version, actor: actor, key: nil, data: Self.json(marker))
    }

    /// The session disappears for the client: deleted with its markers, or no longer
    /// visible to its token. Reads of it answer 404, subscriptions `not_found`, and open
    /// subscriptions to it end.
    public func forget(_ session: UUID) {
        sessions[session] = nil
        markers = markers.filter { $0.value.workSessionID != session }
        let name = Topic.workSession(session).description
        topics[name] = nil
        for connection in subscribers(of: name) { connection.end() }
    }

    /// Another client takes the session's lock over (the current holder's extensions fail).
    public func takeOverLock(_ session: UUID, holder: String = "other") {
        fencing += 1
        locks[session] = (UUID().uuidString, holder, fencing)
    }

    /// Who holds the session's lock now, with its fencing token.
    public func lockHolder(_ session: UUID) -> (holder: String, fencingToken: Int64)? {
        locks[session].map { ($0.holder, $0.fencing) }
    }

    /// The service's marker, as it holds it now.
    public func marker(_ id: UUID) -> Marker? { markers[id] }
    /// The session's markers in creation order, as the service holds them now.
    public func markers(in session: UUID) -> [Marker] {
        markers.values.filter { $0.workSessionID == session }.sorted {
            ($0.createdAt, $0.id.uuidString) < ($1.createdAt, $1.id.uuidString)
        }
    }

    /// The topic's events as the feed lists them.
    public func events(of topic: Topic) -> [TopicEvent] {
        (topics[topic.description] ?? []).compactMap { Self.decodeEvent($0.text) }
    }

    static let unitQuad = [
        Point3(x: 0, y: 0, z: 0), Point3(x: 1, y: 0, z: 0), Point3(x: 1, y: 0, z: 1), Point3(x: 0, y: 0, z: 1),
    ]

    // MARK: HTTP

    func handle(_ request: HTTPRequestData) throws -> HTTPResponseData {
        guard reachable else { throw RoboscopeError.transport("the in-memory service is unreachable") }
        requests.append(request)
        if !failures.isEmpty {
            let status = failures.removeFirst()
            return Self.error(status, "injected failure", headers: status == 503 ? ["Retry-After": "1"] : [:])
        }
        // `requests` keeps what came on the wire; the routes read the body as the server
        // does, inflated (or refused when it is not gzip).
        var request = request
        if request.headers["Content-Encoding"] == "gzip", let body = request.body {
            guard let inflated = RequestCompression.gunzip(body) else {
                return Self.error(400, "Content-Encoding: not a gzip stream")
            }
            request.body = inflated
        }
        let key = request.headers["Idempotency-Key"]
        let actor = request.headers["X-User-Id"] ?? "anonymous"
        if let key, let answer = answers["\(actor)\n\(key)"] {
            var replayed = answer
            replayed.headers["Idempotent-Replayed"] = "true"
            return replayed
        }
        let answer = route(request, actor: actor, key: key)
        if let key, (200..<300).contains(answer.status), request.method != "GET" {
            answers["\(actor)\n\(key)"] = answer
        }
        return answer
    }

    private func route(_ request: HTTPRequestData, actor: String, key: String?) -> HTTPResponseData {
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: true)
        let path = components?.path ?? ""
        let query = Dictionary(
            (components?.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let parts = path.split(separator: "/").map(String.init)
        switch (request.method, parts.dropFirst(2).first ?? "") {
        case ("GET", "realtime"):
            return Self.ok(["websocket_url": "ws://in-memory/api/v1/ws"])
        case ("GET", "changes"):
            guard let topic = query["topic"], let events = topics[topic] else {
                return Self.error(404, "no such topic")
            }
            let since = Int64(query["since"] ?? "0") ?? 0
            let limit = Int(query["limit"] ?? "500") ?? 500
            let after = events.filter { $0.position > since }
            let page = Array(after.prefix(limit))
            let body =
                "{\"data\":[" + page.map(\.text).joined(separator: ",")
                + "],\"next_since\":\(page.last?.position ?? since),"
                + "\"has_more\":\(after.count > limit)}"
            return HTTPResponseData(status: 200, headers: ["Content-Type": "application/json"], body: Data(body.utf8))
        case ("GET", "work-sessions"):
            guard let id = parts.last.flatMap(UUID.init), let session = sessions[id] else {
                return Self.error(404, "no such session")
            }
            return withHead(Self.ok(session), .workSession(id))
        case ("GET", "markers") where parts.count == 3:
            guard let id = query["work_session_id"].flatMap(UUID.init) else {
                return Self.error(400, "work_session_id")
            }
            return withHead(Self.ok(markers(in: id)), .workSession(id))
        case ("GET", "markers"):
            guard let id = parts.last.flatMap(UUID.init), let marker = markers[id] else {
                return Self.error(404, "no such marker")
            }
            return withHead(Self.ok(marker), .workSession(marker.workSessionID))
        case ("POST", "markers"):
            guard let body = request.body, let new = try? WireCoding.decoder().decode(NewMarkerBody.self, from: body)
            else {
                return Self.error(422, "a marker needs work_session_id and four points")
            }
            guard sessions[new.workSessionID] != nil else { return Self.error(422, "work_session_id: no such session") }
            guard markers[new.id] == nil else { return Self.error(409, "id taken", code: .alreadyExists) }
            let created = createMarker(
                NewMarker(
                    id: new.id, workSessionID: new.workSessionID, label: new.label,
                    p1: new.p1, p2: new.p2, p3: new.p3, p4: new.p4, color: new.color), actor: actor, key: key)
            return Self.ok(created, status: 201)
        case ("PATCH", "markers"):
            guard let id = parts.last.flatMap(UUID.init), var marker = markers[id] else {
                return Self.error(404, "no such marker")
            }
            guard let body = request.body, let patch = try? WireCoding.decoder().decode(MarkerPatch.self, from: body)
            else {
                return Self.error(400, "not a marker patch")
            }
            if let expected = patch.version, expected != marker.version {
                return Self.error(
                    409, "marker \(id) is at version \(marker.version), not \(expected)", code: .versionConflict,
                    extra: ["current_version": .integer(marker.version)])
            }
            let changed = patch.applied(to: marker)
            // As the service: a change that changes nothing appends nothing.
            if changed == marker { return Self.ok(marker) }
            marker = changed
            marker.version += 1
            markers[id] = marker
            publish(
                .workSession(marker.workSessionID), type: .markerUpdated, streamType: .marker, id: id,
                version: marker.version, actor: actor, key: key, data: Self.json(marker))
            return Self.ok(marker)
        case ("DELETE", "markers"):
            guard let id = parts.last.flatMap(UUID.init), let current = markers[id] else {
                return Self.error(404, "no such marker")
            }
            if let expected = request.headers["If-Match"].flatMap({ Int64($0) }), expected != current.version {
                return Self.error(
                    409, "marker \(id) is at version \(current.version), not \(expected)", code: .versionConflict,
                    extra: ["current_version": .integer(current.version)])
            }
            let marker = markers.removeValue(forKey: id)!
            publish(
                .workSession(marker.workSessionID), type: .markerDeleted, streamType: .marker, id: id,
                version: marker.version + 1, actor: actor, key: key, data: ["id": .string(id.uuidString.lowercased())])
            return HTTPResponseData(status: 204)
        case ("POST", "presence"):
            guard let id = parts.dropFirst(3).first.flatMap(UUID.init),
                let body = request.body,
                let user = (try? WireCoding.decoder().decode([String: String].self, from: body))?["user_id"]
            else {
                return Self.error(422, "user_id: required")
            }
            heartbeats.append((id, user))
            return Self.ok(["joined": true])
        case ("DELETE", "presence"):
            guard parts.count == 5, let id = UUID(uuidString: parts[3]) else {
                return Self.error(404, "no such presence")
            }
            leaves.append((id, parts[4]))
            return Self.ok(["left": true])
        case ("POST", "locks") where parts.last == "extend":
            guard let id = UUID(uuidString: parts[3]), let body = request.body,
                let token = (try? WireCoding.decoder().decode([String: JSONValue].self, from: body))?["token"]?
                    .stringValue
            else {
                return Self.error(422, "token: required")
            }
            let held = locks[id]?.token == token
            return Self.ok(["extended": held, "acquired": held])
        case ("POST", "locks"):
            guard let id = parts.dropFirst(3).first.flatMap(UUID.init) else {
                return Self.error(404, "no such session")
            }
            if let held = locks[id] {
                return Self.ok(
                    ["acquired": .bool(false), "token": .null, "fencing_token": .null, "holder": .string(held.holder)]
                        as JSONValue)
            }
            fencing += 1
            let token = UUID().uuidString.lowercased()
            locks[id] = (token, actor, fencing)
            return Self.ok(
                [
                    "acquired": .bool(true), "token": .string(token), "fencing_token": .integer(fencing),
                    "expires_at": "2026-11-22T01:25:29Z",
                ] as JSONValue)
        case ("DELETE", "locks"):
            guard let id = parts.dropFirst(3).first.flatMap(UUID.init), let body = request.body,
                let token = (try? WireCoding.decoder().decode([String: JSONValue].self, from: body))?["token"]?
                    .stringValue,
                locks[id]?.token == token
            else {
                return Self.ok(["released": false])
            }
            locks[id] = nil
            return Self.ok(["released": true])
        default:
            return Self.error(404, "no route \(request.method) \(path)")
        }
    }

    private func createMarker(_ new: NewMarker, actor: String, key: String?) -> Marker {
        let id = new.id ?? UUID()
        // A second per event: lists come in creation order, as the service's do.
        let created = epoch.addingTimeInterval(Double(position))
        var marker = Marker(
            id: id, workSessionID: new.workSessionID, label: new.label, p1: new.p1, p2: new.p2, p3: new.p3,
            p4: new.p4, color: new.color, version: 1, meta: new.meta ?? [:], customProps: new.customProps ?? [:],
            calibratedData: new.calibratedData, createdAt: created, updatedAt: created, details: nil)
        let details = MarkerDetails(
            markerID: id, measurements: marker.computedMeasurements, createdAt: created, updatedAt: created)
        marker.details = details
        markers[id] = marker
        let topic = Topic.workSession(new.workSessionID)
        publish(
            topic, type: .markerCreated, streamType: .marker, id: id, version: 1, actor: actor, key: key,
            data: Self.json(marker))
        publish(
            topic, type: .markerDetailsCalculated, streamType: .markerDetails, id: id, version: 1, actor: actor,
            key: key,
            data: Self.json(details))
        return marker
    }

    private func withHead(_ response: HTTPResponseData, _ topic: Topic) -> HTTPResponseData {
        var response = response
        let last = topics[topic.description]?.last
        response.headers["Roboscope-Position"] = String(last?.position ?? 0)
        response.headers["Roboscope-Topic-Seq"] = String(last?.topicSeq ?? 0)
        return response
    }

    // MARK: Events

    private func publish(
        _ topic: Topic, type eventType: EventType, streamType stream: StreamType, id: UUID, version: Int64,
        actor: String, key: String?, data: JSONValue
    ) {
        let type = eventType.rawValue
        let streamType = stream.rawValue
        position += 1
        let name = topic.description
        let sequence = Int64((topics[name]?.count ?? 0) + 1)
        let message: JSONValue = [
            "op": .string(WireOp.event.rawValue), "topic": .string(name), "position": .integer(position),
            "topic_seq": .integer(sequence),
            "type": .string(type), "stream_type": .string(streamType), "stream_id": .string(id.uuidString.lowercased()),
            "version": .integer(version), "recorded_at": "2026-11-22T01:24:59Z", "actor": .string(actor),
            "client_mutation_id": key.map(JSONValue.string) ?? .null, "data": data,
        ]
        let text = String(decoding: (try? WireCoding.encoder().encode(message)) ?? Data(), as: UTF8.self)
        let event = StoredEvent(position: position, topicSeq: sequence, text: text)
        topics[name, default: []].append(event)
        deliverLive(name, event)
    }

    private func deliverLive(_ topic: String, _ event: StoredEvent) {
        if dropLive > 0 {
            dropLive -= 1
            return
        }
        if holdForReorder {
            holdForReorder = false
            held.append((topic, event))
            return
        }
        let copies = duplicateLive > 0 ? 2 : 1
        if duplicateLive > 0 { duplicateLive -= 1 }
        for connection in subscribers(of: topic) {
            for _ in 0..<copies { connection.push(event.text) }
        }
        for (heldTopic, heldEvent) in held {
            for connection in subscribers(of: heldTopic) { connection.push(heldEvent.text) }
        }
        held = []
    }

    // MARK: WebSocket

    private func subscribers(of topic: String) -> [InMemoryWebSocketConnection] {
        connections.values.filter { subscribed[$0.id]?.contains(topic) == true }
    }

    func connect(headers: [String: String]) throws -> InMemoryWebSocketConnection {
        guard reachable else { throw RoboscopeError.transport("the in-memory service is unreachable") }
        if let authorization = headers["Authorization"], authorization.hasPrefix("Bearer ") {
            webSocketTokens.append((String(authorization.dropFirst("Bearer ".count)), true))
        }
        webSocketConnects += 1
        nextConnection += 1
        let connection = InMemoryWebSocketConnection(id: nextConnection, service: self)
        connections[nextConnection] = connection
        return connection
    }

    func received(_ text: String, on connection: InMemoryWebSocketConnection) {
        let message = try? WireCoding.decoder().decode(JSONValue.self, from: Data(text.utf8))
        if message?["op"]?.stringValue == WireOp.auth.rawValue, let token = message?["token"]?.stringValue {
            // Any token is accepted; the tests look at which ones came.
            webSocketTokens.append((token, false))
            let expiry = TokenExpiry.of(token).map { "\"\(ISO8601DateFormatter().string(from: $0))\"" } ?? "null"
            connection.push(
                #"{"op":"\#(WireOp.authenticated.rawValue)","subject":"tester","tenant":"default","#
                    + #""expires_at":\#(expiry)}"#
            )
            return
        }
        guard let message, message["op"]?.stringValue == WireOp.subscribe.rawValue,
            let topic = message["topic"]?.stringValue
        else {
            connection.push(Self.socketError(.malformedRequest, "not understood"))
            return
        }
        let since = message["since"]?.integerValue
        subscriptions.append((topic, since))
        let events = topics[topic] ?? []
        // As the gateway does: a topic with no events is unknown, with or without `since`.
        if events.isEmpty {
            connection.push(Self.socketError(.notFound, "\(topic) not found", topic: topic))
            return
        }
        let catchUp = since.map { since in events.filter { $0.position > since } } ?? []
        if let catchUpLimit, catchUp.count > catchUpLimit {
            connection.push(Self.socketError(.tooFarBehind, "use the changes feed", topic: topic))
            return
        }
        let head = events.last
        let reached = max(since ?? 0, head?.position ?? 0)
        let sequence = reached == (head?.position ?? 0) ? "\(head?.topicSeq ?? 0)" : "null"
        subscribed[connection.id, default: []].insert(topic)
        connection.push(
            #"{"op":"\#(WireOp.subscribed.rawValue)","topic":"\#(topic)","position":\#(reached),"#
                + #""topic_seq":\#(sequence)}"#
        )
        for event in catchUp { connection.push(event.text) }
    }

    func closed(_ connection: InMemoryWebSocketConnection) {
        connections[connection.id] = nil
        subscribed[connection.id] = nil
    }

    // MARK: Plumbing

    static func json<T: Encodable>(_ value: T) -> JSONValue {
        (try? WireCoding.encoder().encode(value)).flatMap { try? WireCoding.decoder().decode(JSONValue.self, from: $0) }
            ?? .null
    }

    static func ok<T: Encodable>(_ value: T, status: Int = 200) -> HTTPResponseData {
        HTTPResponseData(
            status: status, headers: ["Content-Type": "application/json"],
            body: (try? WireCoding.encoder().encode(value)) ?? Data())
    }

    /// A WebSocket `error` message, as the gateway sends one.
    static func socketError(_ code: ErrorCode, _ message: String, topic: String? = nil) -> String {
        var fields: [String: JSONValue] = [
            "op": .string(WireOp.error.rawValue), "code": .string(code.rawValue), "message": .string(message),
        ]
        if let topic { fields["topic"] = .string(topic) }
        return String(decoding: (try? WireCoding.encoder().encode(JSONValue.object(fields))) ?? Data(), as: UTF8.self)
    }

    static func error(
        _ status: Int, _ message: String, code: ErrorCode? = nil, headers: [String: String] = [:],
        extra: [String: JSONValue] = [:]
    ) -> HTTPResponseData {
        var body = extra
        body["code"] = .string(code?.rawValue ?? "error_\(status)")
        body["message"] = .string(message)
        var response = ok(["error": JSONValue.object(body)], status: status)
        response.headers.merge(headers) { $1 }
        return response
    }

    static func decodeEvent(_ text: String) -> TopicEvent? {
        guard var event = try? WireCoding.decoder().decode(TopicEvent.self, from: Data(text.utf8)) else { return nil }
        event.raw = text
        return event
    }
}

/// `InMemoryService` as an HTTP transport.
struct InMemoryHTTPTransport: HTTPTransport {
    let service: InMemoryService

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        if Task.isCancelled { throw RoboscopeError.cancelled }
        await service.yieldAsSeeded()
        let answer = try await service.handle(request)
        await service.yieldAsSeeded()
        return answer
    }
}

/// `InMemoryService` as a WebSocket transport.
struct InMemoryWebSocketTransport: WebSocketTransport {
    let service: InMemoryService

    func connect(to url: URL, headers: [String: String]) async throws -> any WebSocketConnection {
        try await service.connect(headers: headers)
    }
}

/// One in-memory WebSocket connection: messages pushed by the service wait in a stream.
final class InMemoryWebSocketConnection: WebSocketConnection, Sendable {
    let id: UInt64
    let service: InMemoryService
    private let inbound: AsyncThrowingStream<String, any Error>.Continuation
    private let messages: InboundMessages

    init(id: UInt64, service: InMemoryService) {
        self.id = id
        self.service = service
        let (stream, continuation) = AsyncThrowingStream<String, any Error>.makeStream()
        inbound = continuation
        messages = InboundMessages(stream.makeAsyncIterator())
    }

    func push(_ text: String) { inbound.yield(text) }
    func end() { inbound.finish(throwing: RoboscopeError.transport("the in-memory gateway closed the connection")) }

    func send(_ text: String) async throws {
        await service.received(text, on: self)
    }

    func receive() async throws -> String {
        guard let text = try await messages.next() else { throw RoboscopeError.transport("closed") }
        await service.yieldAsSeeded()
        return text
    }

    func close() async {
        end()
        await service.closed(self)
    }
}

/// The receiving end of a connection's stream.
actor InboundMessages {
    private var iterator: AsyncThrowingStream<String, any Error>.AsyncIterator

    init(_ iterator: AsyncThrowingStream<String, any Error>.AsyncIterator) {
        self.iterator = iterator
    }

    func next() async throws -> String? {
        var current = iterator
        defer { iterator = current }
        return try await current.next(isolation: #isolation)
    }
}
