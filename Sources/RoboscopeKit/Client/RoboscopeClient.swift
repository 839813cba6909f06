import Foundation
import RoboscopeGeometry

/// How a client reaches the service.
public struct RoboscopeConfiguration: Sendable {
    /// The HTTP base, such as `http://127.0.0.1:8080` (the kit adds `/api/v1`).
    public var baseURL: URL
    /// The gateway's URL; nil asks the service (`GET /api/v1/realtime`) once.
    public var webSocketURL: URL?
    /// Sent as `X-User-Id` when the service runs without authentication.
    public var userID: String?
    /// Bearer tokens, when the service has authentication on.
    public var tokenProvider: (any TokenProvider)?
    /// Retries of failed requests (writes always carry an idempotency key).
    public var retry: RetryPolicy
    /// Reconnects of live topics: attempts are unlimited, delays as the policy says.
    public var reconnect: RetryPolicy
    public var http: any HTTPTransport
    public var webSocket: any WebSocketTransport
    public var clock: any KitClock
    /// How long one attempt of a call may wait for its answer (a long poll: its wait on
    /// top) before it counts as a lost connection and is retried like one; nil leaves it
    /// to the transport. The kit's own bound, measured on `clock`: a transport that
    /// never answers (a network that accepts and stays silent) cannot hold a call.
    public var requestTimeout: Duration?
    /// Large request bodies go gzip-compressed (`Content-Encoding: gzip`); `.off` sends
    /// every body as it is.
    public var requestCompression = RequestCompression()

    /// The app, as the `User-Agent` of every request and WebSocket names it after the kit
    /// (`RoboscopeKit/1.4.0 (Linux; Inspector/2.1)`): the audit trail shows it as the
    /// device of each change. Nil: the process's name.
    public var appName: String?

    /// Told of every call that ends in an error (after its retries), with the
    /// `traceparent` its attempts carried: what an app logs or shows with the error, so
    /// that the operator finds the call's trace (docs/client-kit.md, "Errors and traces").
    /// Called on the caller's task, before the error is thrown; nil: nobody is told.
    public var onFailedCall: (@Sendable (FailedCall) -> Void)?

    /// `RoboscopeKit/<version> (<system>; <app>)`.
    public var userAgent: String {
        let app = appName ?? ProcessInfo.processInfo.processName
        return "RoboscopeKit/\(RoboscopeKitVersion.current) (\(RoboscopeKitVersion.system); \(app))"
    }

    /// Everything but `baseURL` has a default: the transports that suit the platform
    /// (`defaultHTTPTransport()`, `defaultWebSocketTransport()`), the system clock, six
    /// attempts per call, unlimited reconnects.
    public init(
        baseURL: URL, webSocketURL: URL? = nil, userID: String? = nil, tokenProvider: (any TokenProvider)? = nil,
        retry: RetryPolicy = RetryPolicy(),
        reconnect: RetryPolicy = RetryPolicy(base: .milliseconds(250), cap: .seconds(15)),
        http: any HTTPTransport = defaultHTTPTransport(),
        webSocket: any WebSocketTransport = defaultWebSocketTransport(),
        clock: any KitClock = SystemClock(), requestTimeout: Duration? = .seconds(30)
    ) {
        self.baseURL = baseURL
        self.webSocketURL = webSocketURL
        self.userID = userID
        self.tokenProvider = tokenProvider
        self.retry = retry
        self.reconnect = reconnect
        self.http = http
        self.webSocket = webSocket
        self.clock = clock
        self.requestTimeout = requestTimeout
    }
}

/// A read scoped to one topic, with where the topic stood: pass `position` as `since` to
/// follow the topic from exactly this snapshot on.
public struct Snapshot<Value: Sendable>: Sendable {
    public var value: Value
    public var position: Int64
    public var topicSeq: Int64
}

/// One page of a list; `nextPath` fetches the next (`RoboscopeClient.next`).
public struct ListPage<Item: Sendable & Decodable>: Sendable {
    public var items: [Item]
    public var nextPath: String?
    /// The topic head, for lists that are a read of one topic.
    public var position: Int64?
    public var topicSeq: Int64?
}

/// A page of the changes feed.
public struct ChangesPage: Sendable, Decodable {
    public var data: [TopicEvent]
    public var nextSince: Int64
    public var hasMore: Bool

    enum CodingKeys: String, CodingKey, CaseIterable {
        case data
        case nextSince = "next_since"
        case hasMore = "has_more"
    }
}

/// Every REST call of the service, async, with typed errors (`RoboscopeError`). Writes
/// carry an idempotency key (one per call, the same on each retry) and are retried on
/// 503, timeouts and lost connections with backoff and full jitter; 4xx are never retried.
/// Cancelling the calling task cancels the request on the wire.
public final class RoboscopeClient: Sendable {
    public let configuration: RoboscopeConfiguration
    private let realtime: RealtimeURL
    /// Moves on every `reconnectNow()`.
    private let networkChanges: ChangeSignal

    /// A client of the service `configuration` names.
    public init(_ configuration: RoboscopeConfiguration) {
        self.configuration = configuration
        realtime = RealtimeURL(configured: configuration.webSocketURL)
        networkChanges = ChangeSignal()
    }

    /// A client with the default transports, acting as `userID` (`X-User-Id`, for services
    /// without authentication); `webSocketURL` when the gateway is not where the service
    /// says (behind a proxy), else it is asked once.
    public convenience init(baseURL: URL, webSocketURL: URL? = nil, userID: String? = nil) {
        self.init(RoboscopeConfiguration(baseURL: baseURL, webSocketURL: webSocketURL, userID: userID))
    }

    // MARK: Network changes

    /// The network is back (or changed): every wait before a reconnect or a resend of
    /// this client ends now, so live topics and the outbox try again at once instead of
    /// after their backoff. Call it when the system says the path is satisfied
    /// (`NWPathMonitor`); calling it when nothing waits does nothing.
    public func reconnectNow() {
        networkChanges.signal()
    }

    /// Where `reconnectNow()` stands: read it when a try fails, before the wait.
    var networkGeneration: UInt64 { networkChanges.generation }

    /// Waits `delay` on the kit's clock, or less when `reconnectNow()` is called after
    /// `seen` (a `networkGeneration` read when the try failed).
    func backOff(_ delay: Duration, unlessReconnectAfter seen: UInt64) async throws {
        let clock = configuration.clock
        let changes = networkChanges
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await clock.sleep(for: delay) }
            group.addTask { try await changes.wait(after: seen) }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// The same client with another retry policy (`.never` for a read that should fall
    /// back to a cache at once rather than wait through retries).
    public func retrying(_ policy: RetryPolicy) -> RoboscopeClient {
        var configuration = configuration
        configuration.retry = policy
        return RoboscopeClient(configuration, realtime: realtime, networkChanges: networkChanges)
    }

    private init(_ configuration: RoboscopeConfiguration, realtime: RealtimeURL, networkChanges: ChangeSignal) {
        self.configuration = configuration
        self.realtime = realtime
        self.networkChanges = networkChanges
    }

    // MARK: Spaces

    /// The spaces (inactive ones with `includeInactive`), by creation time, one page.
    public func spaces(
        key: String? = nil, includeInactive: Bool = false, limit: Int? = nil
    ) async throws -> ListPage<Space> {
        try await list(
            "/spaces",
            ["key": key, "include_inactive": includeInactive ? "true" : nil, "limit": limit.map(String.init)])
    }

    /// One space, with the head of its topic.
    public func space(_ id: UUID) async throws -> Snapshot<Space> {
        try await snapshot("/spaces/\(Self.text(id))")
    }

    /// Creates a space (`key` unique, else `alreadyExists`).
    public func createSpace(_ space: NewSpace, idempotencyKey: String = UUID().uuidString) async throws -> Space {
        try await decode(try await write("POST", "/spaces", space, key: idempotencyKey))
    }

    /// Changes the fields given (`[String: JSONValue]`, as the API takes them).
    public func updateSpace(
        _ id: UUID, _ fields: [String: JSONValue], version: Int64? = nil,
        idempotencyKey: String = UUID().uuidString
    ) async throws -> Space {
        try await patch("/spaces/\(Self.text(id))", fields, version: version, key: idempotencyKey)
    }

    /// Deletes a space with its work sessions and markers.
    public func deleteSpace(_ id: UUID, version: Int64? = nil, idempotencyKey: String = UUID().uuidString) async throws
    {
        try await delete("/spaces/\(Self.text(id))", version: version, key: idempotencyKey)
    }

    // MARK: Work sessions

    /// Work sessions, filtered, by creation time, one page (a space's: with its topic head).
    public func workSessions(
        spaceID: UUID? = nil, status: WorkSession.Status? = nil, type: WorkSession.SessionType? = nil,
        limit: Int? = nil
    ) async throws -> ListPage<WorkSession> {
        try await list(
            "/work-sessions",
            [
                "space_id": spaceID.map(Self.text), "status": status?.rawValue,
                "session_type": type?.rawValue, "limit": limit.map(String.init),
            ])
    }

    /// One work session, with the head of its topic.
    public func workSession(_ id: UUID) async throws -> Snapshot<WorkSession> {
        try await snapshot("/work-sessions/\(Self.text(id))")
    }

    /// Creates a work session in a space.
    public func createWorkSession(
        _ session: NewWorkSession, idempotencyKey: String = UUID().uuidString
    ) async throws -> WorkSession {
        try await decode(try await write("POST", "/work-sessions", session, key: idempotencyKey))
    }

    /// Changes the fields given; with `version`, a concurrent change is `versionConflict`.
    public func updateWorkSession(
        _ id: UUID, _ fields: [String: JSONValue], version: Int64? = nil,
        idempotencyKey: String = UUID().uuidString
    ) async throws -> WorkSession {
        try await patch("/work-sessions/\(Self.text(id))", fields, version: version, key: idempotencyKey)
    }

    /// Deletes a work session with its markers.
    public func deleteWorkSession(
        _ id: UUID, version: Int64? = nil, idempotencyKey: String = UUID().uuidString
    ) async throws {
        try await delete("/work-sessions/\(Self.text(id))", version: version, key: idempotencyKey)
    }

    // MARK: Markers

    /// A work session's markers (a read of its topic: the page carries the topic head).
    public func markers(workSessionID: UUID, limit: Int? = nil) async throws -> ListPage<Marker> {
        try await list("/markers", ["work_session_id": Self.text(workSessionID), "limit": limit.map(String.init)])
    }

    /// The markers of every work session of a space whose centre is within `range`
    /// metres of `point` on the floor plan, nearest first (what a map fetches as it pans:
    /// cancel the task when the view moves on).
    public func markers(
        spaceID: UUID, near point: PlanePoint, range: Double, limit: Int? = nil
    ) async throws -> [Marker] {
        try await list(
            "/markers",
            [
                "space_id": Self.text(spaceID), "near": "\(point.x),\(point.z)", "range": "\(range)",
                "limit": limit.map(String.init),
            ]
        ).items
    }

    /// The markers of a space whose centre lies in the box.
    public func markers(
        spaceID: UUID, inBoxFrom minimum: PlanePoint, to maximum: PlanePoint,
        limit: Int? = nil
    ) async throws -> ListPage<Marker> {
        try await list(
            "/markers",
            [
                "space_id": Self.text(spaceID), "bbox": "\(minimum.x),\(minimum.z),\(maximum.x),\(maximum.z)",
                "limit": limit.map(String.init),
            ])
    }

    /// One marker with its details, with the head of its work session's topic.
    public func marker(_ id: UUID) async throws -> Snapshot<Marker> {
        try await snapshot("/markers/\(Self.text(id))")
    }

    /// Creates a marker; the answer carries the details the server computed.
    public func createMarker(_ marker: NewMarker, idempotencyKey: String = UUID().uuidString) async throws -> Marker {
        try await decode(try await write("POST", "/markers", marker, key: idempotencyKey))
    }

    /// All or nothing, in one work session.
    public func createMarkers(
        _ markers: [NewMarker], idempotencyKey: String = UUID().uuidString
    ) async throws -> [Marker] {
        try await decode(try await write("POST", "/markers/bulk", ["markers": markers], key: idempotencyKey))
    }

    /// Applies `patch` (with its `version`, a concurrent change is `versionConflict`).
    public func updateMarker(
        _ id: UUID, _ patch: MarkerPatch, idempotencyKey: String = UUID().uuidString
    ) async throws -> Marker {
        try await decode(try await write("PATCH", "/markers/\(Self.text(id))", patch, key: idempotencyKey))
    }

    /// Deletes a marker and its details.
    public func deleteMarker(_ id: UUID, version: Int64? = nil, idempotencyKey: String = UUID().uuidString) async throws
    {
        try await delete("/markers/\(Self.text(id))", version: version, key: idempotencyKey)
    }

    // MARK: Marker details

    /// A marker's details, with the head of its work session's topic.
    public func details(markerID: UUID) async throws -> Snapshot<MarkerDetails> {
        try await snapshot("/markers/\(Self.text(markerID))/details")
    }

    /// Overrides figures (by their wire names) and `custom_props`.
    public func putDetails(
        markerID: UUID, _ fields: [String: JSONValue], idempotencyKey: String = UUID().uuidString
    ) async throws -> MarkerDetails {
        try await decode(try await write("PUT", "/markers/\(Self.text(markerID))/details", fields, key: idempotencyKey))
    }

    /// Deletes a marker's details (the marker stays).
    public func deleteDetails(markerID: UUID, idempotencyKey: String = UUID().uuidString) async throws {
        _ = try await write("DELETE", "/markers/\(Self.text(markerID))/details", nil as JSONValue?, key: idempotencyKey)
    }

    /// Recomputes a marker's details from its corners now, keeping their `custom_props`.
    public func calculateDetails(
        markerID: UUID, idempotencyKey: String = UUID().uuidString
    ) async throws -> MarkerDetails {
        try await decode(
            try await write(
                "POST", "/markers/\(Self.text(markerID))/details/calculate", nil as JSONValue?, key: idempotencyKey))
    }

    // MARK: Presence and locks

    /// One heartbeat: `user` counts as present in the session for the presence window.
    @discardableResult
    public func heartbeat(workSessionID: UUID, user: String) async throws -> JSONValue {
        try await decode(try await write("POST", "/presence/\(Self.text(workSessionID))", ["user_id": user], key: nil))
    }

    /// Who was heard from in the session within the presence window.
    public func presentUsers(workSessionID: UUID) async throws -> [String] {
        let reply: [String: [String]] = try await decode(try await read("/presence/\(Self.text(workSessionID))"))
        return reply["users"] ?? []
    }

    /// Ends `user`'s presence in the session at once.
    public func leave(workSessionID: UUID, user: String) async throws {
        _ = try await write("DELETE", "/presence/\(Self.text(workSessionID))/\(user)", nil as JSONValue?, key: nil)
    }

    /// Takes the session's edit lock for `ttlSeconds`; `acquired` is false while another
    /// client holds it. (`LockLease` keeps one alive.)
    public func acquireLock(
        workSessionID: UUID, ttlSeconds: Int, enforce: Bool = false,
        idempotencyKey: String = UUID().uuidString
    ) async throws -> LockGrant {
        try await decode(
            try await write(
                "POST", "/locks/\(Self.text(workSessionID))",
                ["ttl_seconds": .integer(Int64(ttlSeconds)), "enforce": .bool(enforce)] as JSONValue,
                key: idempotencyKey))
    }

    /// Who holds the session's lock, and until when.
    public func lockState(workSessionID: UUID) async throws -> LockState {
        try await decode(try await read("/locks/\(Self.text(workSessionID))"))
    }

    /// True when `token` still held the lock and it now lasts `ttlSeconds` more.
    public func extendLock(
        workSessionID: UUID, token: String, ttlSeconds: Int,
        idempotencyKey: String = UUID().uuidString
    ) async throws -> Bool {
        let reply: [String: Bool] = try await decode(
            try await write(
                "POST", "/locks/\(Self.text(workSessionID))/extend",
                ["token": .string(token), "ttl_seconds": .integer(Int64(ttlSeconds))] as JSONValue, key: idempotencyKey)
        )
        return reply["extended"] ?? false
    }

    @discardableResult
    /// Releases the lock `token` holds; false when it no longer did.
    public func releaseLock(
        workSessionID: UUID, token: String, idempotencyKey: String = UUID().uuidString
    ) async throws -> Bool {
        let reply: [String: Bool] = try await decode(
            try await write(
                "DELETE", "/locks/\(Self.text(workSessionID))", ["token": .string(token)] as JSONValue,
                key: idempotencyKey))
        return reply["released"] ?? false
    }

    // MARK: Sync

    /// A topic's events after `since`, in topic order; with `wait`, an empty answer is
    /// held until an event arrives (a long poll).
    public func changes(
        _ topic: Topic, since: Int64, limit: Int = 500, wait: Duration? = nil
    ) async throws -> ChangesPage {
        var query = ["topic": topic.description, "since": String(since), "limit": String(limit)]
        if let wait { query["wait"] = String(wait.seconds) }
        let response = try await send(
            method: "GET", path: Self.path("/changes", query), body: nil, key: nil, ifMatch: nil,
            extraTime: wait ?? .zero)
        var page: ChangesPage = try await decode(response)
        // Keep each message as the server wrote it (the WebSocket's bytes), for clients
        // that print or store them.
        let messages = RawJSON.elements(ofArray: "data", in: Array(response.body))
        if messages.count == page.data.count {
            for index in messages.indices { page.data[index].raw = String(decoding: messages[index], as: UTF8.self) }
        }
        return page
    }

    /// The gateway's URL: the one configured, else what the service names (asked once).
    public func webSocketURL() async throws -> URL {
        try await realtime.resolve {
            let reply: [String: String] = try await self.decode(try await self.read("/realtime"))
            guard let text = reply["websocket_url"], let url = URL(string: text) else {
                throw RoboscopeError.malformedResponse("GET /api/v1/realtime named no websocket_url")
            }
            return url
        }
    }

    /// The next page of a list.
    public func next<Item>(_ page: ListPage<Item>) async throws -> ListPage<Item>? {
        guard let path = page.nextPath else { return nil }
        return try await listPage(path.hasPrefix("/api/v1") ? String(path.dropFirst("/api/v1".count)) : path)
    }

    // MARK: Plumbing

    /// Sends a request that reads: retried like writes (reads are safe to repeat).
    func read(_ path: String) async throws -> HTTPResponseData {
        try await send(method: "GET", path: path, body: nil, key: nil, ifMatch: nil)
    }

    func write<Body: Encodable>(
        _ method: String, _ path: String, _ body: Body?, key: String?, ifMatch: Int64? = nil
    ) async throws -> HTTPResponseData {
        let bytes: Data?
        do {
            bytes = try body.map { try WireCoding.encoder().encode($0) }
        } catch {
            throw RoboscopeError.invalid(field: nil, message: "the body cannot be encoded: \(error)")
        }
        return try await send(method: method, path: path, body: bytes, key: key, ifMatch: ifMatch)
    }

    /// Sends with retries: 503, 429, "still in progress", lost connections and timeouts
    /// are sent again (a write with the same key), after a jittered delay; the rest is
    /// thrown as `RoboscopeError`.
    ///
    /// Every attempt carries `traceParent` as W3C `traceparent` (a new trace per call when
    /// none is given): the server stores it with the events the write makes, and their
    /// subscribers receive it with them.
    public func send(
        method: String, path: String, body: Data?, key: String?, ifMatch: Int64? = nil,
        extraHeaders: [String: String] = [:], traceParent: TraceParent? = nil
    ) async throws -> HTTPResponseData {
        try await send(
            method: method, path: path, body: body, key: key, ifMatch: ifMatch, extraHeaders: extraHeaders,
            extraTime: .zero, traceParent: traceParent)
    }

    /// `send`, but a refusal that retrying cannot change (a 4xx, or a 5xx once the retries
    /// are spent) is answered, not thrown: its status, headers and body exactly as the
    /// server wrote them (`roboscope-client` prints them). Network failures still throw.
    public func sendAnswering(
        method: String, path: String, body: Data?, key: String?, traceParent: TraceParent? = nil
    ) async throws -> HTTPResponseData {
        try await send(
            method: method, path: path, body: body, key: key, ifMatch: nil, extraTime: .zero, answersRefusals: true,
            traceParent: traceParent)
    }

    /// `send`, each attempt allowed `extraTime` on top of the request timeout (a long poll's wait).
    func send(
        method: String, path: String, body: Data?, key: String?, ifMatch: Int64?,
        extraHeaders: [String: String] = [:], extraTime: Duration, answersRefusals: Bool = false,
        traceParent: TraceParent? = nil
    ) async throws -> HTTPResponseData {
        var random = SystemRandomNumberGenerator()
        // One trace for the call: its retries are attempts of the same operation.
        let traceParent = traceParent ?? TraceParent.random(using: &random)
        do {
            return try await sendAttempts(
                method: method, path: path, body: body, key: key, ifMatch: ifMatch, extraHeaders: extraHeaders,
                extraTime: extraTime, answersRefusals: answersRefusals, trace: traceParent.header)
        } catch let error as RoboscopeError {
            configuration.onFailedCall?(
                FailedCall(method: method, path: path, idempotencyKey: key, traceParent: traceParent, error: error))
            throw error
        }
    }

    private func sendAttempts(
        method: String, path: String, body: Data?, key: String?, ifMatch: Int64?, extraHeaders: [String: String],
        extraTime: Duration, answersRefusals: Bool, trace: String
    ) async throws -> HTTPResponseData {
        var random = SystemRandomNumberGenerator()
        var attempt = 1
        var refreshedToken = false
        // Compressed once: every retry sends the same bytes with the same key.
        let (body, contentEncoding) = body.map { configuration.requestCompression.encode($0) } ?? (nil, nil)
        while true {
            if Task.isCancelled { throw RoboscopeError.cancelled }
            var headers = extraHeaders
            headers["Accept"] = "application/json"
            headers["User-Agent"] = configuration.userAgent
            if body != nil { headers["Content-Type"] = "application/json" }
            if let contentEncoding { headers["Content-Encoding"] = contentEncoding }
            if let key { headers["Idempotency-Key"] = key }
            headers["traceparent"] = trace
            if let ifMatch { headers["If-Match"] = String(ifMatch) }
            if let user = configuration.userID { headers["X-User-Id"] = user }
            if let provider = configuration.tokenProvider {
                headers["Authorization"] = "Bearer \(try await provider.token())"
            }
            guard let url = URL(string: "/api/v1" + path, relativeTo: configuration.baseURL) else {
                throw RoboscopeError.badRequest(field: nil, message: "not a path: \(path)")
            }
            let failure: RoboscopeError
            var retryAfter: Double? = nil
            var refusal: HTTPResponseData?
            let network = networkGeneration
            do {
                let response = try await sendOnce(
                    HTTPRequestData(method: method, url: url.absoluteURL, headers: headers, body: body),
                    extraTime: extraTime)
                if (200..<300).contains(response.status) { return response }
                refusal = response
                failure = RoboscopeError.from(status: response.status, headers: response.headers, body: response.body)
                if case .unauthorized = failure, let provider = configuration.tokenProvider, !refreshedToken {
                    refreshedToken = true
                    await provider.invalidate()
                    continue
                }
                switch failure {
                case .unavailable(let after, _): retryAfter = after
                case .rateLimited(let after): retryAfter = after
                default: break
                }
            } catch let error as RoboscopeError {
                failure = error
            }
            guard failure.isRetryable, attempt < configuration.retry.attempts else {
                if answersRefusals, let refusal { return refusal }
                throw failure
            }
            let delay = configuration.retry.delay(forRetry: attempt, retryAfter: retryAfter, using: &random)
            do {
                if case .transport = failure {
                    // The network failed: `reconnectNow()` ends the wait.
                    try await backOff(delay, unlessReconnectAfter: network)
                } else {
                    // The server asked for the wait (503, 429): it stands.
                    try await configuration.clock.sleep(for: delay)
                }
            } catch {
                throw RoboscopeError.cancelled
            }
            attempt += 1
        }
    }

    /// One attempt, bounded by the request timeout: past it, or once the calling task is
    /// cancelled, the attempt is cancelled (which closes its connection) and the call
    /// goes on at once, whether or not the transport has noticed.
    private func sendOnce(_ request: HTTPRequestData, extraTime: Duration) async throws -> HTTPResponseData {
        let http = configuration.http
        let limit = configuration.requestTimeout.map { $0 + extraTime }
        return try await FirstOutcome.bounded(
            by: limit, on: configuration.clock,
            timeout: {
                RoboscopeError.transport(TransportFailure("no answer within \(limit?.seconds ?? 0) s", timedOut: true))
            },
            cancelled: { RoboscopeError.cancelled }
        ) {
            do {
                return try await http.send(request)
            } catch is CancellationError {
                throw RoboscopeError.cancelled
            }
        }
    }

    private func list<Item: Decodable & Sendable>(
        _ path: String, _ query: [String: String?]
    ) async throws -> ListPage<Item> {
        try await listPage(Self.path(path, query.compactMapValues { $0 }))
    }

    private func listPage<Item: Decodable & Sendable>(_ path: String) async throws -> ListPage<Item> {
        let response = try await read(path)
        let link = response.header("Link").flatMap(Self.nextLink)
        return ListPage(
            items: try await decode(response), nextPath: link,
            position: response.header("Roboscope-Position").flatMap { Int64($0) },
            topicSeq: response.header("Roboscope-Topic-Seq").flatMap { Int64($0) })
    }

    private func snapshot<Value: Decodable & Sendable>(_ path: String) async throws -> Snapshot<Value> {
        let response = try await read(path)
        return Snapshot(
            value: try await decode(response),
            position: response.header("Roboscope-Position").flatMap { Int64($0) } ?? 0,
            topicSeq: response.header("Roboscope-Topic-Seq").flatMap { Int64($0) } ?? 0)
    }

    /// A `PATCH` of the `fields` given, with `version` in the body when given; the entity
    /// as it now is.
    private func patch<T: Decodable>(
        _ path: String, _ fields: [String: JSONValue], version: Int64?, key: String
    ) async throws -> T {
        try await decode(try await write("PATCH", path, Self.versioned(fields, version), key: key))
    }

    /// A `DELETE`, with `If-Match: version` when given.
    private func delete(_ path: String, version: Int64?, key: String) async throws {
        _ = try await write("DELETE", path, nil as JSONValue?, key: key, ifMatch: version)
    }

    func decode<T: Decodable>(_ response: HTTPResponseData) async throws -> T {
        do {
            return try WireCoding.decoder().decode(T.self, from: response.body)
        } catch {
            throw RoboscopeError.malformedResponse("cannot read \(T.self) from the answer: \(error)")
        }
    }

    /// `<…>; rel="next"` → the reference inside.
    static func nextLink(_ header: String) -> String? {
        for part in header.split(separator: ",") where part.contains("rel=\"next\"") {
            guard let open = part.firstIndex(of: "<"), let close = part.firstIndex(of: ">"), open < close else {
                continue
            }
            return String(part[part.index(after: open)..<close])
        }
        return nil
    }

    static func path(_ path: String, _ query: [String: String]) -> String {
        guard !query.isEmpty else { return path }
        var components = URLComponents()
        components.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        // `+` would read as a space in a query.
        return path + "?" + (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
    }

    static func versioned(_ fields: [String: JSONValue], _ version: Int64?) -> [String: JSONValue] {
        var fields = fields
        if let version { fields["version"] = .integer(version) }
        return fields
    }

    static func text(_ id: UUID) -> String { id.uuidString.lowercased() }
}

/// The gateway URL, resolved once.
actor RealtimeURL {
    private var url: URL?

    init(configured: URL?) {
        url = configured
    }

    func resolve(_ ask: @Sendable () async throws -> URL) async throws -> URL {
        if let url { return url }
        let found = try await ask()
        url = found
        return found
    }
}

/// What acquiring a lock answers.
public struct LockGrant: Sendable, Hashable, Decodable {
    public var acquired: Bool
    /// The token to extend and release with, and to send as `X-Lock-Token` on writes.
    public var token: String?
    /// Grows with every acquisition: stamp writes with it to refuse a stale holder's.
    public var fencingToken: Int64?
    public var holder: String?
    public var expiresAt: Date?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case acquired, token, holder
        case fencingToken = "fencing_token"
        case expiresAt = "expires_at"
    }
}

/// Who holds a session's lock.
public struct LockState: Sendable, Hashable, Decodable {
    public var locked: Bool
    public var holder: String?
    public var expiresAt: Date?
    public var fencingToken: Int64?
    public var enforce: Bool

    enum CodingKeys: String, CodingKey, CaseIterable {
        case locked, holder, enforce
        case expiresAt = "expires_at"
        case fencingToken = "fencing_token"
    }
}
