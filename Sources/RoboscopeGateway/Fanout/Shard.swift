import BlockingPool
import Foundation
import Logging
import RoboscopeAuth
import RoboscopeDomain
import RoboscopeMetrics
import RoboscopePostgres
import Tracing
import WebSocketCodec
import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// The connections of one event loop and what they subscribe to: it accepts them,
/// admits their upgrades (`AdmissionPolicy`), serves their messages (`Shard+Protocol`),
/// settles their subscriptions, queues their catch-up pages and fans live items out to
/// them (`FanoutTable`).
///
/// Not `Sendable`: a shard is made on its loop's thread (`Gateway`) and lives there with
/// its connections. Other threads reach it only through its `ShardMailbox`, with a
/// `ShardMessage` its loop hands to `receive`.
final class Shard {
    let loop: EventLoop<ShardMessage>
    let configuration: GatewayConfiguration
    let policy: AdmissionPolicy
    /// What every shard shares (the tailer, the presence thread, the counters).
    let hub: Hub
    /// How other threads, and the workers' answers, reach this shard.
    let mailbox: ShardMailbox
    /// Read buffer shared by every connection of the loop (they read one at a time).
    let scratch: UnsafeMutableRawBufferPointer
    private var connections: [UInt64: Connection] = [:]
    /// When each connection next needs its tick.
    private var ticks = TickSchedule<ContinuousClock.Instant>()
    /// Per topic, its subscribers here, so fan-out needs no per-connection lookup.
    private var fanout = FanoutTable<Connection>()
    private var nextID: UInt64 = 0
    /// The look-ups asked of the tailer and not yet answered, by number: what to do with
    /// the answer (`ShardMessage.placed`).
    private var lookUps: [UInt64: (Shard, Place?) -> Void] = [:]
    private var nextLookUp: UInt64 = 0
    /// The connection directory's rows of this shard changed since they were handed in.
    var directoryChanged = false
    private var directoryHandedAt: ContinuousClock.Instant?
    private var acceptor: Acceptor?
    /// Whether the acceptor listens: it stops at the connection ceiling and backs off
    /// when descriptors run out.
    private var acceptGate: AcceptGate<ContinuousClock.Instant>
    private(set) var isShuttingDown = false
    /// Connections with frames queued by `deliver` since the last `flushDelivered`.
    private var dirty: [Connection] = []
    private var undeliveredMessages = 0
    /// The spans of the deliveries `deliver` queued (with tracing on), ended once
    /// `flushDelivered` wrote them.
    private var deliverySpans: [any Span] = []
    private let clock = ContinuousClock()
    /// Compressors without context, one per window a connection here agreed: a frame is
    /// compressed once, by whichever shard first queues it (docs/websocket.md, "Compression").
    private var deflaters: [Int: MessageDeflater] = [:]

    /// A shard on the calling thread, which then `run`s it; it accepts on `listener`
    /// (every loop waits on it; EPOLLEXCLUSIVE wakes one).
    init(address: ShardAddress, parts: EventLoop<ShardMessage>.Parts, listener: Int32, hub: Hub) {
        mailbox = ShardMailbox(address: address, inbox: parts.inbox)
        self.hub = hub
        configuration = hub.configuration
        policy = AdmissionPolicy(configuration: hub.configuration)
        acceptGate = AcceptGate(ceiling: hub.configuration.maxConnections)
        loop = EventLoop(name: "ws-loop-\(address.index)", parts: parts)
        scratch = .allocate(byteCount: 64 * 1024, alignment: 16)
        acceptor = Acceptor(listener: listener, shard: self)
    }

    deinit {
        scratch.deallocate()
    }

    /// Serves until the mailbox is closed.
    func run() {
        if let acceptor { arm(acceptor) }
        loop.run(receive: receive, afterMessages: flushDelivered, onTick: tick)
        // What is left holds the shard (connections, the acceptor, look-ups): let it go.
        terminateAll()
        acceptor = nil
        lookUps = [:]
    }

    /// A message from another thread, on the loop's.
    private func receive(_ message: ShardMessage) {
        switch message {
        case .deliver(let items): deliver(items)
        case .send(let bytes, let connectionID): send(bytes, to: connectionID)
        case .settle(let connectionID, let grant, let outcome):
            settle(connectionID: connectionID, grant: grant, outcome: outcome)
        case .catchUpPage(let page, let connectionID, let grant):
            catchUpPage(page, connectionID: connectionID, grant: grant)
        case .placed(let lookUp, let place): lookUps.removeValue(forKey: lookUp)?(self, place)
        case .presenceRefused(let key, let connectionID): presenceRefused(key, connectionID: connectionID)
        case .end(let reason, let text, let ends): end(reason, text, where: ends)
        case .closeAll: closeAll()
        case .terminateAll: terminateAll()
        }
    }

    /// Asks the tailer where `stream` lives; `answer` runs here with the place (at once
    /// when the tailer knows it already).
    func lookUp(_ stream: StreamRef, answer: @escaping (Shard, Place?) -> Void) {
        if let place = hub.tailer.cachedPlace(stream) { return answer(self, place) }
        nextLookUp += 1
        lookUps[nextLookUp] = answer
        hub.tailer.lookUp(stream, for: mailbox, number: nextLookUp)
    }

    var now: ContinuousClock.Instant { clock.now }

    func deflater(windowBits: Int) -> MessageDeflater {
        if let deflater = deflaters[windowBits] { return deflater }
        let made = MessageDeflater(windowBits: windowBits, keepsContext: false)
        deflaters[windowBits] = made
        return made
    }

    private static let origin = ContinuousClock.now

    /// An instant as seconds since an arbitrary origin, for the token buckets.
    static func seconds(_ instant: ContinuousClock.Instant) -> Double {
        (instant - origin).secondsDouble
    }
    var connectionCount: Int { connections.count }

    // MARK: Connections

    func accepted(fd: Int32, peer: String) {
        loop.assertInLoop()
        nextID += 1
        let connection = Connection(id: nextID, fd: fd, peer: peer, shard: self, now: now)
        hub.clients.insert(peer)
        do {
            try loop.register(fd, connection, events: Epoll.readable)
        } catch {
            hub.clients.remove(peer)
            hub.releasePlace()
            close(fd)
            return
        }
        connections[connection.id] = connection
        ticks.schedule(connection.id, at: connection.nextDeadline)
        hub.metrics.opened()
    }

    /// What an upgrade request earns.
    enum Admission {
        case refused(UpgradeRejection, RefusalReason)
        /// No `Authorization` header, authentication on: the `auth` op must follow.
        case awaitingToken
        /// The connection acts for its principal until the instant (nil: for good).
        case authenticated(validUntil: ContinuousClock.Instant?)
    }

    /// Decides whether an upgrade may proceed, and for whom (`AdmissionPolicy`), counting
    /// the connection against the client a trusted proxy names.
    func admit(_ request: UpgradeRequest, connection: Connection) -> Admission {
        let client = policy.client(of: request, peer: connection.peer)
        if client != connection.client {
            hub.clients.remove(connection.client)
            hub.clients.insert(client)
            connection.client = client
        }
        switch policy.decide(
            request, connectionsOfClient: hub.clients.count(of: client), isShuttingDown: isShuttingDown)
        {
        case .refused(let rejection, let reason):
            return .refused(rejection, reason)
        case .awaitingToken:
            return .awaitingToken
        case .admitted(let principal):
            if let refusal = tenantIsFull(principal.tenant) {
                return .refused(UpgradeRejection(status: 429, message: refusal), .rateLimited)
            }
            connection.principal = principal
            connection.countIn(principal.tenant)
            return .authenticated(validUntil: validUntil(of: principal))
        }
    }

    /// Why one more connection of `tenant` is refused (its plan's `max_connections` held
    /// in this process), or nil.
    func tenantIsFull(_ tenant: String) -> String? {
        guard let limit = configuration.plans?.plan(for: tenant).maxConnections,
            hub.tenants.count(of: tenant) >= limit
        else { return nil }
        return "tenant \(tenant) holds its \(limit) connections on this server"
    }

    func validUntil(of principal: Principal) -> ContinuousClock.Instant? {
        policy.validUntil(of: principal, now: now, wallNow: Date())
    }

    func removed(_ connection: Connection) {
        loop.deregister(connection.fd)
        connections[connection.id] = nil
        ticks.remove(connection.id)
        connection.catchUps.cancelAll()
        countWaitingForSocket(connection)
        for topic in connection.subscriptions.closed() {
            unlink(connection, from: topic)
        }
        for key in connection.presence {
            hub.presence.release(key)
        }
        connection.presence = []
        hub.clients.remove(connection.client)
        hub.releasePlace()
        directoryChanged = true
        if let tenant = connection.countedTenant {
            hub.tenants.remove(tenant)
            TenantMetrics.shared.connections(tenant: tenant, change: -1)
        }
        hub.metrics.closed()
    }

    func unlink(_ connection: Connection, from topic: Topic) {
        connection.catchUps.cancel(topic)
        countWaitingForSocket(connection)
        fanout.remove(connection.id, from: topic)
        hub.registry.remove(topic)
        directoryChanged = true
    }

    /// The open connection `id`, if it is still here.
    func connection(_ id: UInt64) -> Connection? {
        connections[id]
    }

    /// A catch-up costs its size in the op budgets (`OpBudgets.charge`).
    private func charge(_ connection: Connection, catchUpEvents events: Int) {
        hub.budgets.charge(
            &connection.opBudget, principal: connection.isAuthenticated ? connection.principal : nil,
            catchUpEvents: events, now: Self.seconds(now))
    }

    /// The tailer's answer to a subscription, run in order with live deliveries: live
    /// events the tailer reads after granting it are held back until its catch-up, paged
    /// by the catch-up reader, is sent.
    func settle(connectionID: UInt64, grant: PendingGrant, outcome: SubscribeOutcome) {
        let topic = grant.topic
        let granted = if case .granted = outcome { true } else { false }
        guard let connection = connections[connectionID],
            connection.subscriptions.settled(grant, granted: granted, connectionOpen: connection.isOpen) == .answer
        else {
            // Withdrawn after the tailer looked: a grant costs a few index probes, and its
            // catch-up is never read.
            if granted {
                hub.registry.remove(topic)
                hub.metrics.answered("withdrawn")
            }
            return
        }
        switch outcome {
        case .refused(let error):
            reply(connection, ServerMessage.error(error, topic: topic))
        case .granted(let position, let topicSeq, let covered, let catchUp, let until, let head):
            hub.metrics.answered("granted")
            directoryChanged = true
            connection.enqueue(
                SharedFrame(text: ServerMessage.subscribed(topic, position: position, topicSeq: topicSeq)))
            fanout.add(
                connectionID, connection, to: topic, covered: covered, presenceChanges: grant.presenceChanges,
                catchingUp: catchUp != nil)
            if let catchUp {
                charge(connection, catchUpEvents: catchUp.events)
                connection.catchUps.start(topic, grant: grant, range: catchUp, until: until, head: head)
                askNextPage(for: connection)
            }
            connection.flush()
            if topic.kind == .workSession {
                hub.presence.snapshot(of: topic, for: mailbox, connectionID: connectionID)
            }
        }
    }

    /// Asks the catch-up reader for the connection's next page, if its socket has room.
    func askNextPage(for connection: Connection) {
        if connection.isOpen, let ask = connection.catchUps.nextAsk(queuedBytes: connection.queuedBytes) {
            hub.catchUps.request(CatchUpPageRequest(mailbox: mailbox, connectionID: connection.id, ask: ask))
        }
        countWaitingForSocket(connection)
    }

    /// Keeps `roboscope_ws_catch_ups_waiting_for_socket` true to the connection's state.
    func countWaitingForSocket(_ connection: Connection) {
        let waiting = connection.isOpen && connection.catchUps.waitsForSocket(queuedBytes: connection.queuedBytes)
        guard waiting != connection.catchUpWaitsForSocket else { return }
        connection.catchUpWaitsForSocket = waiting
        hub.metrics.catchUpWaitingForSocket(waiting ? 1 : -1)
    }

    /// A page of a catch-up came from the reader: queued (as one compressed stream when
    /// the client keeps our context), and either the next asked for as the socket
    /// drains, or, the catch-up done, the live frames held meanwhile queued after it.
    func catchUpPage(_ page: CatchUpPage, connectionID: UInt64, grant: PendingGrant) {
        guard let connection = connections[connectionID], connection.isOpen else { return }
        guard case .page(let frames, let last, let onStandby) = page else {
            connection.catchUps.cancel(grant.topic)
            return connection.close(
                .internalError, "the catch-up of \(grant.topic) could not be read: reconnect with since")
        }
        switch connection.catchUps.arrived(grant, last: last, onStandby: onStandby) {
        case .stale:
            return askNextPage(for: connection)
        case .more:
            connection.enqueueCatchUp(frames)
        case .completed(let held):
            connection.enqueueCatchUp(frames)
            for frame in held { connection.enqueue(frame) }
            fanout.caughtUp(connectionID, on: grant.topic)
        }
        // Writing asks for the next page once the socket has taken enough.
        connection.flush()
    }

    func reply(_ connection: Connection, _ message: [UInt8]) {
        connection.send(SharedFrame(text: message))
    }

    /// A message for one connection (presence answers), if it is still open.
    func send(_ message: [UInt8], to connectionID: UInt64) {
        guard let connection = connections[connectionID], connection.isOpen else { return }
        reply(connection, message)
    }

    // MARK: Fan-out

    /// Queues each item's frame for the topic's subscribers; `flushDelivered` writes them
    /// once the loop has run every task queued so far.
    func deliver(_ items: [LiveItem]) {
        loop.assertInLoop()
        // The batch's items hold their frames, so an identifier is not reused within it.
        var compressedForms: [DeflatedKey: SharedFrame] = [:]
        for item in items {
            var reached = 0
            defer { traceDelivery(of: item, to: reached) }
            fanout.route(item) { connection, delivery in
                reached += 1
                switch delivery {
                case .send(let frame):
                    connection.enqueue(frame, sharing: &compressedForms)
                    undeliveredMessages += 1
                case .hold(let frame):
                    // Held frames count against the slow-reader bound: the flush checks it.
                    connection.catchUps.hold(frame, for: item.topic)
                }
                if !connection.flushPending {
                    connection.flushPending = true
                    dirty.append(connection)
                }
            }
        }
    }

    /// A span of the write's trace for an event this shard handed to `subscribers`
    /// sockets, ended when they are written (`flushDelivered`).
    private func traceDelivery(of item: LiveItem, to subscribers: Int) {
        guard SpanRecording.isOn, subscribers > 0, let trace = item.traceParent else { return }
        let span = InstrumentationSystem.tracer.startSpan(
            "roboscope.deliver", context: TraceContext.context(continuing: trace), ofKind: .producer)
        span.attributes["roboscope.topic"] = item.topic.description
        span.attributes["roboscope.subscribers"] = subscribers
        if let position = item.position { span.attributes["roboscope.position"] = position }
        deliverySpans.append(span)
    }

    /// Writes each connection that `deliver` touched, once. A loop that falls behind
    /// finds several of the tailer's batches queued at once: each subscriber then gets
    /// them all in one `writev`, not one each, so the cost of catching up shrinks as
    /// the backlog grows instead of growing with it.
    func flushDelivered() {
        guard !dirty.isEmpty else { return }
        for connection in dirty {
            connection.flushPending = false
            connection.flush()
        }
        hub.metrics.delivered(messages: undeliveredMessages, connections: dirty.count)
        undeliveredMessages = 0
        dirty.removeAll(keepingCapacity: true)
        for span in deliverySpans { span.end() }
        deliverySpans.removeAll(keepingCapacity: true)
    }

    func slowConsumerClosed() {
        hub.metrics.slowConsumer()
    }

    // MARK: Time and shutdown

    /// A connection's state changed: its next tick may be due sooner.
    func deadlineMayHaveMoved(_ connection: Connection) {
        ticks.schedule(connection.id, at: connection.nextDeadline)
    }

    private func tick(_ now: ContinuousClock.Instant) {
        // Only the connections whose deadline has come (`TickSchedule`).
        for id in ticks.popDue(now: now) {
            guard let connection = connections[id] else { continue }
            connection.tick(now)
            ticks.schedule(id, at: connection.nextDeadline)
        }
        hub.refusals.tick(now: now)
        handInDirectory(now)
        if let acceptor, acceptGate.tick(now: now, open: hub.placesTaken) {
            arm(acceptor)
        }
    }

    /// This shard's rows of the connection directory, when they changed, at most every 2 s.
    private func handInDirectory(_ now: ContinuousClock.Instant) {
        guard directoryChanged else { return }
        if let last = directoryHandedAt, now - last < .seconds(2) { return }
        directoryChanged = false
        directoryHandedAt = now
        let rows = connections.values.lazy.filter(\.isAuthenticated).prefix(ConnectionDirectory.maxRows).map {
            connection in
            ConnectionDirectory.Row(
                tenant: connection.principal.tenant, subject: connection.principal.subject,
                connectedAt: connection.connectedAt,
                clientAddress: connection.client, userAgent: connection.userAgent,
                topics: connection.subscriptions.active.map(\.description).sorted())
        }
        hub.directory.update(shard: mailbox.address.index, Array(rows))
    }

    // MARK: Accepting

    /// Whether the acceptor may take one more connection now; when not, the listener is
    /// disarmed until a tick finds room.
    /// A place is taken for the connection to come: `acceptEnded(accepted: false)` gives
    /// it back when none came, `removed` when the connection goes.
    func mayAccept() -> Bool {
        if acceptGate.mayAccept(open: hub.placesTaken), hub.takePlace(below: acceptGate.ceiling) { return true }
        // Another shard took the last place meanwhile: full all the same.
        _ = acceptGate.mayAccept(open: acceptGate.ceiling)
        disarm("at the connection ceiling (\(acceptGate.ceiling)); not accepting until a connection closes")
        return false
    }

    func acceptSucceeded() {
        acceptGate.accepted()
    }

    /// `accept` failed for want of descriptors: the listener rests, longer each time.
    func outOfDescriptors() {
        acceptGate.outOfDescriptors(now: now)
        disarm("out of file descriptors; not accepting for a while")
    }

    private func disarm(_ reason: String) {
        guard let acceptor else { return }
        loop.deregister(acceptor.listener)
        let (log, leftOut) = acceptGate.log(now: now)
        if log {
            hub.logger.warning(
                "\(reason)",
                metadata: [
                    "open_connections": "\(hub.metrics.snapshot.openConnections)",
                    "lines_left_out": "\(leftOut)",
                ])
        }
    }

    private func arm(_ acceptor: Acceptor) {
        do {
            // EPOLLEXCLUSIVE admits EPOLLIN but not EPOLLRDHUP.
            try loop.register(acceptor.listener, acceptor, events: EPOLLIN.rawValue, exclusive: true)
        } catch {
            hub.logger.error("cannot watch the listening socket", metadata: ["error": "\(error)"])
        }
    }

    /// Stops accepting and starts closing every connection with 1001.
    func closeAll() {
        isShuttingDown = true
        if let acceptor {
            loop.deregister(acceptor.listener)
            self.acceptor = nil
        }
        for connection in Array(connections.values) {
            connection.close(.goingAway, "server shutting down")
        }
    }

    /// Closes with 4001 every authenticated connection whose principal `ends` says no longer
    /// holds (a revocation, a retired key, an operator's disconnect), counted and logged
    /// with `reason`.
    func end(_ reason: RefusalReason, _ message: String, where ends: (Principal) -> Bool) {
        for connection in Array(connections.values) where connection.isAuthenticated && ends(connection.principal) {
            connection.refuse(reason, closing: .unauthorized, message)
        }
    }

    /// Closes whatever is left without waiting for the peers.
    func terminateAll() {
        for connection in Array(connections.values) { connection.terminate() }
    }
}

/// Accepts on the listening socket for one shard. It holds its shard, which drops it
/// when it stops accepting (`closeAll`, the end of `run`): a cycle on one thread, ended there.
final class Acceptor: LoopHandler {
    let listener: Int32
    let shard: Shard

    init(listener: Int32, shard: Shard) {
        self.listener = listener
        self.shard = shard
    }

    func handle(events: UInt32) {
        for _ in 0..<64 {
            guard shard.mayAccept() else { return }
            do {
                guard case .done(let accepted) = try Socket.accept(listener) else {
                    shard.hub.releasePlace()
                    return
                }
                shard.acceptSucceeded()
                shard.accepted(fd: accepted.fd, peer: accepted.peer)
            } catch let error as SystemError where error.errno == EMFILE || error.errno == ENFILE {
                shard.hub.releasePlace()
                shard.outOfDescriptors()
                return
            } catch {
                shard.hub.releasePlace()
                return
            }
        }
    }
}
