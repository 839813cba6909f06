import Foundation
import RoboscopeGeometry

/// A read that may have come from the device's store.
public struct CachedRead<Value: Sendable>: Sendable {
    /// Where a read's value came from.
    public enum Source: Hashable, Sendable {
        /// Fresh from the server (and stored for later).
        case server
        /// From the store: the server could not be reached, or was not asked.
        case cache
    }

    public var value: Value
    public var source: Source
    /// Writes applied to `value` that the server has not confirmed yet.
    public var pendingWrites: Int
    /// Where the stored copy stands on the session's topic.
    public var cursor: TopicCursor?
}

/// A write the server refused because the entity changed meanwhile (409), handed to the
/// app's resolver.
public struct ConflictReport: Sendable {
    public var key: String
    public var markerID: UUID?
    /// What the device meant to send.
    public var patch: MarkerPatch?
    /// The entity as the server holds it now (nil when it is gone).
    public var server: Marker?
    public var currentVersion: Int64?
    /// The write was a delete (`patch` is nil): `.retry` deletes at the server's version.
    public var deleting: Bool = false
}

/// What the app decides about a conflict.
public enum ConflictResolution: Sendable {
    /// Keep the server's state; the local change is dropped (and reported).
    case acceptServer
    /// Send this change instead (with a new key), based on the server's version; for a
    /// delete, delete again at the server's version (the patch is not used).
    case retry(MarkerPatch)
}

/// Decides conflicts; the default keeps the server's state.
public struct ConflictResolver: Sendable {
    public let resolve: @Sendable (ConflictReport) async -> ConflictResolution

    /// A resolver that runs `resolve` for each conflict.
    public init(_ resolve: @escaping @Sendable (ConflictReport) async -> ConflictResolution) {
        self.resolve = resolve
    }

    public static let serverWins = ConflictResolver { _ in .acceptServer }
}

/// A work session kept on the device: its markers (and the session) cached with the
/// session topic's cursor, reads that work offline, and writes that go to a durable
/// outbox first, show at once (optimistically), are sent in order with their
/// idempotency keys when the network is there, and are settled when their own event
/// (`client_mutation_id`) comes back.
public actor OfflineWorkSession {
    /// The session's store work (SQLite commits, each an fsync) runs on a thread of its
    /// own, never on Swift's cooperative pool, so a stalled disk holds no thread that the
    /// app's other tasks and timers need (`DedicatedThreadExecutor`); the thread ends
    /// with the session.
    private let executor = DedicatedThreadExecutor(name: "offline-work-session")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public nonisolated let workSessionID: UUID
    public nonisolated let topic: Topic
    let client: RoboscopeClient
    let store: OfflineStore
    let resolver: ConflictResolver
    private var tasks: [Task<Void, Never>] = []
    /// Moves on every change of the store, the outbox or the connection.
    private let changes = ChangeSignal()
    /// Moves when the outbox has something new to send, or the connection came back.
    private let outboxWake = ChangeSignal()
    /// A send or a snapshot is running (`exclusively`).
    private var exclusiveBusy = false
    private let exclusiveDone = ChangeSignal()
    /// Sends and snapshots waiting for the one running (tests wait on it).
    private(set) var waitingForExclusive = 0
    /// Calls of `synchronized()` waiting for a change (tests wait on it).
    var waitingForChanges: Int { changes.waiting }
    /// Conflicts the resolver saw, and writes the server refused outright (4xx).
    public nonisolated let reports: AsyncStream<OutboxReport>
    private let reportsContinuation: AsyncStream<OutboxReport>.Continuation
    /// How the session's live connection stands.
    public private(set) var connection: ConnectionState = .offline
    /// The coarse state: events arrive as they happen.
    public var isOnline: Bool { connection.isOnline }

    /// The network is back: the live connection and the outbox try again now rather
    /// than after their backoff (`RoboscopeClient.reconnectNow()`).
    public nonisolated func reconnectNow() {
        client.reconnectNow()
    }
    /// Why the session is gone, once the server says so: deleted, or not visible to the
    /// token any more (`notFound`, `forbidden`). The store no longer holds it, its unsent
    /// writes were reported as refused, and nothing more is sent or followed.
    public private(set) var gone: RoboscopeError?

    /// How long a refreshing read waits for the server before it answers from the store.
    public nonisolated let readDeadline: Duration

    /// The session `workSessionID`, kept in `store`; `resolver` decides version conflicts;
    /// reads that refresh answer from the store after `readDeadline` at most.
    public init(
        client: RoboscopeClient, store: OfflineStore, workSessionID: UUID, resolver: ConflictResolver = .serverWins,
        readDeadline: Duration = .seconds(2)
    ) {
        self.readDeadline = readDeadline
        self.client = client
        self.store = store
        self.workSessionID = workSessionID
        topic = .workSession(workSessionID)
        self.resolver = resolver
        (reports, reportsContinuation) = AsyncStream<OutboxReport>.makeStream()
    }

    /// Starts following the session and sending the outbox; safe to call again.
    public func start() {
        guard tasks.isEmpty, gone == nil else { return }
        tasks.append(Task { await self.follow() })
        tasks.append(Task { await self.send() })
    }

    /// Stops both; the store keeps everything for the next start.
    public func stop() {
        for task in tasks { task.cancel() }
        tasks = []
        changes.signal()
    }

    // MARK: Reads

    /// The session's markers: from the server when it answers within `readDeadline`
    /// (`refresh`; one attempt, no retries), else from the store at the deadline while
    /// the refresh goes on and lands in the store; the outbox's writes applied on top
    /// either way.
    public func markers(refresh: Bool = true) async -> CachedRead<[Marker]> {
        var source = CachedRead<[Marker]>.Source.cache
        if refresh, await refreshed(within: readDeadline) { source = .server }
        let pending = (try? store.pending(topic: topic.description)) ?? []
        let cached = (try? store.entities(Marker.self, kind: "marker", topic: topic)) ?? []
        return CachedRead(
            value: Self.overlay(cached, pending), source: source, pendingWrites: pending.count,
            cursor: try? store.cursor(for: topic))
    }

    /// Starts a refresh and answers whether it succeeded within `deadline` (on the kit's
    /// clock); past the deadline it answers false and the refresh carries on.
    private func refreshed(within deadline: Duration) async -> Bool {
        let once = client.retrying(.never)
        let first = FirstOutcome<Bool>()
        let clock = client.configuration.clock
        // The refresh is not a racer: past the deadline it carries on and lands in the store.
        let refreshing = Task { try await self.refresh(using: once) }
        return
            (try? await withCheckedThrowingContinuation { continuation in
                first.await(continuation)
                first.race {
                    guard (try? await clock.sleep(for: deadline)) != nil else { return }
                    first.settle(.success(false))
                }
                Task { first.settle(.success((try? await refreshing.value) != nil)) }
            }) ?? false
    }

    /// The session as the app shows it, yielded at once and then on every change: each
    /// local write, each settled or refused write, each live event, each change of the
    /// connection. A consumer slower than the changes gets the latest state (states
    /// are whole, so none is lost by skipping one). Ends when the consuming task is
    /// cancelled; after `gone`, it yields the last state and ends.
    public nonisolated func observe() -> AsyncStream<OfflineSessionState> {
        let (states, continuation) = AsyncStream.makeStream(
            of: OfflineSessionState.self, bufferingPolicy: .bufferingNewest(1))
        let task = Task { await self.publish(to: continuation) }
        continuation.onTermination = { _ in task.cancel() }
        return states
    }

    private func publish(to continuation: AsyncStream<OfflineSessionState>.Continuation) async {
        while !Task.isCancelled {
            let seen = changes.generation
            continuation.yield(currentState())
            if gone != nil { break }
            do { try await changes.wait(after: seen) } catch { break }
        }
        continuation.finish()
    }

    /// What the store holds, with the outbox on top, as of now.
    func currentState() -> OfflineSessionState {
        let pending = (try? store.pending(topic: topic.description)) ?? []
        let cached = (try? store.entities(Marker.self, kind: "marker", topic: topic)) ?? []
        return OfflineSessionState(
            markers: Self.overlay(cached, pending), session: session(), pendingWrites: pending.count,
            fromCache: connection != .live, connection: connection,
            cursor: (try? store.cursor(for: topic)) ?? nil, gone: gone)
    }

    /// The session itself, as stored.
    public func session() -> WorkSession? {
        (try? store.entities(WorkSession.self, kind: "work_session", topic: topic))?.first
    }

    /// Takes a snapshot from the server into the store, when it is newer than the store.
    public func refresh() async throws {
        try await refresh(using: client)
    }

    private func refresh(using client: RoboscopeClient) async throws {
        try await exclusively { try await self.takeSnapshot(using: client) }
    }

    /// Runs a send or a snapshot, never both at once: a write answered while a snapshot
    /// was being read may or may not be in it, and its event may then never arrive.
    private func exclusively<T>(_ body: () async throws -> T) async throws -> T {
        while exclusiveBusy {
            let seen = exclusiveDone.generation
            if !exclusiveBusy { break }
            waitingForExclusive += 1
            defer { waitingForExclusive -= 1 }
            try await exclusiveDone.wait(after: seen)
        }
        exclusiveBusy = true
        defer {
            exclusiveBusy = false
            exclusiveDone.signal()
        }
        return try await body()
    }

    private func takeSnapshot(using client: RoboscopeClient) async throws {
        if let gone { throw gone }
        let snapshot: Snapshot<WorkSession>
        do {
            snapshot = try await client.workSession(workSessionID)
        } catch let error as RoboscopeError {
            if Self.meansGone(error) { vanished(error) }
            throw error
        }
        let page = try await client.markers(workSessionID: workSessionID)
        var markers = page.items
        var next = page
        while let more = try await client.next(next) {
            markers += more.items
            next = more
        }
        // The list's head covers the session read's (it was taken later).
        let head = TopicCursor(
            position: page.position ?? snapshot.position, topicSeq: page.topicSeq ?? snapshot.topicSeq)
        if let stored = try store.cursor(for: topic), stored.position > head.position { return }
        let encoder = WireCoding.encoder()
        var rows: [(kind: String, id: String, body: Data)] = [
            ("work_session", Self.text(workSessionID), try encoder.encode(snapshot.value))
        ]
        rows += try markers.map { ("marker", Self.text($0.id), try encoder.encode($0)) }
        try store.replace(topic: topic, with: rows, cursor: head)
        notifyChanged()
    }

    // MARK: Writes

    /// Creates a marker: stored in the outbox before this returns, shown by reads at once.
    @discardableResult
    public func create(_ marker: NewMarker) throws -> PendingWrite {
        var marker = marker
        if marker.id == nil { marker.id = UUID() }
        return try enqueue("POST", "/markers", try WireCoding.encoder().encode(marker))
    }

    @discardableResult
    /// Changes a marker: stored before this returns, shown at once, sent when online.
    /// Pass `version: marker.version` from a read of this session: the version a read
    /// shows counts the outbox's own writes still on their way (a marker created offline
    /// reads as version 1, each change adds one), which is the version the server will
    /// have when this change arrives, unless someone else changed it meanwhile (then it
    /// is a conflict for the resolver).
    public func update(_ markerID: UUID, _ patch: MarkerPatch) throws -> PendingWrite {
        try enqueue("PATCH", "/markers/\(Self.text(markerID))", try WireCoding.encoder().encode(patch))
    }

    @discardableResult
    /// Deletes a marker: stored before this returns, hidden at once, sent when online,
    /// with `If-Match` of `version` (default: the version a read shows now, counted as
    /// `update` says), so a delete of a marker someone changed meanwhile goes to the
    /// resolver instead of silently winning.
    public func delete(_ markerID: UUID, version: Int64? = nil) throws -> PendingWrite {
        let shown = version ?? currentState().markers.first { $0.id == markerID }?.version
        return try enqueue("DELETE", "/markers/\(Self.text(markerID))", nil, ifMatch: shown)
    }

    private func enqueue(_ method: String, _ path: String, _ body: Data?, ifMatch: Int64? = nil) throws -> PendingWrite
    {
        let write = try store.enqueue(
            method: method, path: path, body: body, topic: topic.description, ifMatch: ifMatch)
        outboxWake.signal()
        notifyChanged()
        return write
    }

    /// Returns once the outbox is empty and the store has caught up with the session's
    /// topic on the server (each write's own event applied). Throws the error that
    /// stopped it (the session is gone, the server cannot be asked), or
    /// `RoboscopeError.cancelled` at once when the calling task is cancelled. While
    /// writes wait in the outbox it waits for them (the send loop retries through
    /// outages), so give it a deadline of your own when the device may stay offline.
    public func synchronized() async throws {
        do {
            while true {
                // Read before looking: a change between the look and the wait is not lost.
                let seen = changes.generation
                if let gone { throw gone }
                if try store.pending(topic: topic.description).isEmpty {
                    let cursor = try store.cursor(for: topic) ?? TopicCursor()
                    let ahead = try await client.changes(topic, since: cursor.position, limit: 1)
                    if ahead.data.isEmpty { return }
                }
                try await changes.wait(after: seen)
            }
        } catch is CancellationError {
            throw RoboscopeError.cancelled
        }
    }

    // MARK: The two loops

    /// Follows the topic from the stored cursor, applying each event to the store.
    private func follow() async {
        // Without a stored cursor, a snapshot first (retried until the network is there):
        // following "from now on" would miss what happened before the first connect.
        var random = SystemRandomNumberGenerator()
        var failures = 0
        while !Task.isCancelled, gone == nil, (try? store.cursor(for: topic)) == nil {
            let network = client.networkGeneration
            if (try? await refresh(using: client.retrying(.never))) != nil { break }
            if gone != nil { return }
            failures += 1
            let delay = client.configuration.reconnect.delay(forRetry: failures, using: &random)
            do { try await client.backOff(delay, unlessReconnectAfter: network) } catch { return }
        }
        while !Task.isCancelled {
            let start = (try? store.cursor(for: topic)) ?? nil
            let live = client.follow(topic, from: start ?? TopicCursor())
            let states = Task { [weak self] in
                for await state in live.states { await self?.connectionChanged(state) }
            }
            do {
                for try await event in live.events { try apply(event) }
            } catch {
                // The topic's stream ends only when the session is gone (not found, or
                // the token no longer covers it).
                states.cancel()
                if let error = error as? RoboscopeError, Self.meansGone(error) { vanished(error) }
                return
            }
            states.cancel()
        }
    }

    /// Whether an answer about the session itself means it is gone for this client.
    static func meansGone(_ error: RoboscopeError) -> Bool {
        switch error {
        case .notFound, .forbidden: return true
        default: return false
        }
    }

    /// The server says the session is gone: the cache is dropped, each unsent write is
    /// reported as refused (it can never apply), the app is told, and both loops stop.
    private func vanished(_ error: RoboscopeError) {
        guard gone == nil else { return }
        gone = error
        let dropped = (try? store.forget(topic: topic)) ?? []
        for write in dropped { reportsContinuation.yield(.refused(write, error)) }
        reportsContinuation.yield(.gone(workSessionID: workSessionID, error))
        stop()
        notifyChanged()
    }

    private func connectionChanged(_ state: ConnectionState) {
        connection = state
        if state == .live { outboxWake.signal() }
        notifyChanged()
    }

    private func apply(_ event: TopicEvent) throws {
        let cursor = TopicCursor(position: event.position, topicSeq: event.topicSeq)
        var action = CachedChange.Action.none
        let encoder = WireCoding.encoder()
        switch (event.streamType, event.isDeletion) {
        case ("marker", false):
            let marker = try event.decodeData(Marker.self)
            action = .upsert(kind: "marker", id: Self.text(marker.id), body: try encoder.encode(marker))
        case ("marker", true):
            action = .delete(kind: "marker", id: event.streamID.map(Self.text) ?? "")
        case ("marker_details", let deleted):
            if let id = event.streamID,
                var marker = try store.entities(Marker.self, kind: "marker", topic: topic).first(where: { $0.id == id })
            {
                marker.details = deleted ? nil : try event.decodeData(MarkerDetails.self)
                action = .upsert(kind: "marker", id: Self.text(id), body: try encoder.encode(marker))
            }
        case ("work_session", false):
            action = .upsert(
                kind: "work_session", id: Self.text(workSessionID),
                body: try encoder.encode(try event.decodeData(WorkSession.self)))
        case ("work_session", true):
            action = .delete(kind: "work_session", id: Self.text(workSessionID))
        default:
            break
        }
        if try store.apply(CachedChange(action: action, settles: event.clientMutationID), cursor: cursor, topic: topic)
        {
            notifyChanged()
        }
    }

    /// Sends the outbox in order whenever woken (a new write, a reconnect) and retries
    /// through outages; a write the server has answered waits for its event.
    private func send() async {
        var random = SystemRandomNumberGenerator()
        var failures = 0
        var seen: UInt64? = nil
        // One attempt at a time, so a snapshot never waits behind retries; the backoff
        // between attempts is this loop's.
        let once = client.retrying(.never)
        while !Task.isCancelled {
            if let seen {
                do { try await outboxWake.wait(after: seen) } catch { return }
            }
            seen = outboxWake.generation
            while !Task.isCancelled {
                guard let write = (try? store.pending(topic: topic.description))?.first(where: { !$0.sent }) else {
                    break
                }
                let network = client.networkGeneration
                do {
                    let answer = try await exclusively {
                        try await once.send(
                            method: write.method, path: write.path, body: write.body, key: write.key,
                            ifMatch: write.ifMatch, traceParent: write.traceParent)
                    }
                    if answer.header("Idempotent-Replayed") == "true" {
                        // Applied by an earlier send whose answer was lost: its event is in
                        // the past, perhaps inside a snapshot taken since, so it may never
                        // come. Settled now; if the event is still ahead, it applies then.
                        try store.settle(write.key)
                    } else {
                        try store.markSent(write.key)
                    }
                    failures = 0
                } catch let error as RoboscopeError where error.isRetryable || error == .cancelled {
                    if error == .cancelled { return }
                    failures += 1
                    let delay = client.configuration.reconnect.delay(forRetry: failures, using: &random)
                    do { try await client.backOff(delay, unlessReconnectAfter: network) } catch { return }
                } catch is CancellationError {
                    // Stopped while waiting for a snapshot to finish: the write was not
                    // sent and stays in the outbox.
                    return
                } catch {
                    await refused(write, error)
                }
                notifyChanged()
            }
        }
    }

    /// A write the server refused: a conflict goes to the resolver, the rest is reported
    /// and dropped (the server's state stands).
    private func refused(_ write: PendingWrite, _ error: any Error) async {
        try? store.settle(write.key)
        guard case RoboscopeError.versionConflict(let current, _)? = error as? RoboscopeError,
            write.method == "PATCH" || write.method == "DELETE",
            let id = UUID(uuidString: String(write.path.split(separator: "/").last ?? ""))
        else {
            reportsContinuation.yield(.refused(write, (error as? RoboscopeError) ?? .transport("\(error)")))
            return
        }
        let server = try? await client.marker(id).value
        let patch = write.body.flatMap { try? WireCoding.decoder().decode(MarkerPatch.self, from: $0) }
        let report = ConflictReport(
            key: write.key, markerID: id, patch: patch, server: server, currentVersion: current,
            deleting: write.method == "DELETE")
        switch await resolver.resolve(report) {
        case .acceptServer:
            reportsContinuation.yield(.conflict(report, resolution: "server state kept"))
        case .retry where report.deleting:
            _ = try? enqueue("DELETE", write.path, nil, ifMatch: server?.version ?? current)
            reportsContinuation.yield(.conflict(report, resolution: "deleted again"))
        case .retry(var again):
            if again.version == nil { again.version = server?.version ?? current }
            _ = try? enqueue("PATCH", write.path, try WireCoding.encoder().encode(again))
            reportsContinuation.yield(.conflict(report, resolution: "sent again"))
        }
    }

    private func notifyChanged() {
        changes.signal()
    }

    // MARK: Optimistic reads

    /// The stored markers with the outbox's writes applied in order.
    static func overlay(_ markers: [Marker], _ pending: [PendingWrite]) -> [Marker] {
        var result = markers
        let decoder = WireCoding.decoder()
        for write in pending {
            let id = write.path.split(separator: "/").last.flatMap { UUID(uuidString: String($0)) }
            switch write.method {
            case "POST" where write.path == "/markers":
                guard let body = write.body, let new = try? decoder.decode(NewMarkerBody.self, from: body),
                    !result.contains(where: { $0.id == new.id })
                else { continue }
                result.append(new.optimistic)
            case "PATCH":
                guard let id, let body = write.body, let patch = try? decoder.decode(MarkerPatch.self, from: body),
                    let index = result.firstIndex(where: { $0.id == id })
                else { continue }
                let changed = patch.applied(to: result[index])
                // The server counts a change that changes something: so does the overlay.
                result[index] = changed == result[index] ? changed : Self.bumped(changed)
            case "DELETE":
                result.removeAll { $0.id == id }
            default:
                continue
            }
        }
        return result
    }

    static func text(_ id: UUID) -> String { id.uuidString.lowercased() }

    static func bumped(_ marker: Marker) -> Marker {
        var marker = marker
        marker.version += 1
        return marker
    }
}

/// An offline session as the app shows it (`OfflineWorkSession.observe()`).
public struct OfflineSessionState: Sendable {
    /// The stored markers with the outbox's writes applied on top.
    public var markers: [Marker]
    public var session: WorkSession?
    /// Writes the server has not confirmed yet.
    public var pendingWrites: Int
    /// True while the data is not live (offline, connecting, catching up).
    public var fromCache: Bool
    public var connection: ConnectionState
    /// Where the stored copy stands on the session's topic.
    public var cursor: TopicCursor?
    /// Why the session is gone, once it is.
    public var gone: RoboscopeError?
}

/// What happened to a write the server would not apply as sent.
public enum OutboxReport: Sendable {
    case conflict(ConflictReport, resolution: String)
    case refused(PendingWrite, RoboscopeError)
    /// The session is gone (deleted, or no longer visible to the token): its cache was
    /// dropped, and each unsent write came before this as `refused`.
    case gone(workSessionID: UUID, RoboscopeError)
}

/// A stored `NewMarker` read back, shown as the marker it will become (the in-memory
/// service of RoboscopeKitTesting reads a `POST /markers` body the same way).
@_spi(Testing) public struct NewMarkerBody: Decodable {
    @_spi(Testing) public var id: UUID
    @_spi(Testing) public var workSessionID: UUID
    @_spi(Testing) public var label: String?
    @_spi(Testing) public var p1, p2, p3, p4: Point3
    @_spi(Testing) public var color: String?

    enum CodingKeys: String, CodingKey {
        case id, label, p1, p2, p3, p4, color
        case workSessionID = "work_session_id"
    }

    var optimistic: Marker {
        let now = Date()
        var marker = Marker(
            id: id, workSessionID: workSessionID, label: label, p1: p1, p2: p2, p3: p3,
            p4: p4, color: color, version: 1, meta: [:], customProps: [:], calibratedData: nil,
            createdAt: now, updatedAt: now, details: nil)
        marker.details = MarkerDetails(
            markerID: id, measurements: marker.computedMeasurements, createdAt: now, updatedAt: now)
        return marker
    }
}
