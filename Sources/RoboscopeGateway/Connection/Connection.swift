import Foundation
import RoboscopeDomain
import RoboscopeMetrics
import RoboscopePostgres
import WebSocketCodec
import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// One client socket on a shard's loop: the upgrade, the frames, the close handshake.
/// What a message means is the shard's business; this type moves bytes.
final class Connection: LoopHandler {
    enum Mode {
        /// `/api/v1/ws`: the subscription protocol.
        case api
        /// `/api/v1/ws/echo`: every message comes back (conformance runs only).
        case echo
    }

    let id: UInt64
    let fd: Int32
    let peer: String
    /// The address its connection counts against (`maxConnectionsPerClient`): the peer,
    /// or the client a trusted proxy names on the upgrade.
    var client: String
    /// Its shard, on the same thread: the shard drops the connection when it is removed
    /// (`Shard.removed`), which ends the cycle.
    let shard: Shard
    private var machine: ConnectionStateMachine<ContinuousClock.Instant> {
        // A deadline brought closer (a close, a short-lived token) is scheduled now; one
        // moved later (the peer was heard) waits for the earlier one to come, so the
        // machine's changes on every read and write cost no schedule look-up.
        didSet {
            guard let next = machine.nextDeadline, oldValue.nextDeadline.map({ next < $0 }) ?? true else { return }
            shard.deadlineMayHaveMoved(self)
        }
    }
    /// When its next tick is due (`ConnectionStateMachine.nextDeadline`).
    var nextDeadline: ContinuousClock.Instant? { machine.nextDeadline }
    private(set) var mode: Mode = .api
    private var head: [UInt8] = []
    private var reader: MessageReader?
    private var outbound = OutboundQueue()
    private var watchingWritable = false
    /// After the queue drains: half-close (our close frame or a refusal went out).
    private var shutdownAfterFlush = false

    /// Topics this connection receives (the shard keeps the fan-out side).
    var subscriptions: ConnectionSubscriptions
    /// Catch-ups of its granted subscriptions still being paged to it.
    var catchUps: ConnectionCatchUps
    /// Counted in `roboscope_ws_catch_ups_waiting_for_socket` (the shard keeps it true).
    var catchUpWaitsForSocket = false
    var presence: Set<PresenceKey> = []
    /// `presence` ops whose session is being looked up.
    var presenceLookUps = 0
    /// Who the connection acts for: set at the upgrade (docs/security.md); until then
    /// nothing is visible to it.
    var principal = Principal(subject: "anonymous", tenant: "", scopes: Scopes([]), spaces: [])
    /// Queued for the shard's flush at the end of a fan-out batch.
    var flushPending = false
    /// Ops this connection may still send (`--ws-op-rate`).
    var opBudget: TokenBucket
    /// permessage-deflate as agreed at the upgrade; nil when the client offered none.
    private(set) var deflate: PerMessageDeflate?
    /// When it was accepted, on the wall clock (the operator's connection list).
    let connectedAt = Timestamp(microsecondsSinceEpoch: Int64(Date().timeIntervalSince1970 * 1_000_000))
    /// The upgrade's `User-Agent` (for refusal lines and the operator's connection list).
    private(set) var userAgent: String?
    /// The tenant whose `roboscope_tenant_ws_connections` counts it, once it has acted for one.
    private(set) var countedTenant: String?

    init(id: UInt64, fd: Int32, peer: String, shard: Shard, now: ContinuousClock.Instant) {
        self.id = id
        self.fd = fd
        self.peer = peer
        client = peer
        self.shard = shard
        subscriptions = ConnectionSubscriptions(
            limit: shard.configuration.maxSubscriptionsPerConnection,
            inFlightLimit: shard.configuration.maxPendingSubscriptions)
        // A page is asked for while less than a quarter of the bound waits, and holds at
        // most another quarter (and one event): a client reading as fast as it can is
        // never closed by its catch-up, and one that stops costs no more reads.
        let quarter = max(1, shard.configuration.maxBufferedBytes / 4)
        catchUps = ConnectionCatchUps(lowWater: min(256 << 10, quarter), pageBytes: min(256 << 10, quarter))
        opBudget = TokenBucket(
            rate: shard.configuration.opRate, burst: shard.configuration.opBurst, now: Shard.seconds(now))
        machine = ConnectionStateMachine(
            now: now, pingInterval: shard.configuration.pingInterval,
            maxBufferedBytes: shard.configuration.maxBufferedBytes)
    }

    var isOpen: Bool { machine.isOpen }
    /// Whether it may send ops other than `auth` (docs/security.md, WebSocket).
    var isAuthenticated: Bool { machine.isAuthenticated }

    /// An `auth` op was accepted: `principal` acts from now on, until `validUntil`.
    func authenticated(as principal: Principal, validUntil: ContinuousClock.Instant?) {
        self.principal = principal
        machine.authenticated(validUntil: validUntil)
        countIn(principal.tenant)
    }

    /// Counts it in its tenant's open connections, once (a refreshed token keeps the tenant).
    func countIn(_ tenant: String) {
        guard countedTenant == nil else { return }
        countedTenant = tenant
        shard.hub.tenants.insert(tenant)
        shard.directoryChanged = true
        TenantMetrics.shared.connections(tenant: tenant, change: 1)
    }

    /// Closes with `code` (4001, 4003) for `reason`, counted and logged (`RefusalLog`).
    func refuse(_ reason: RefusalReason, closing code: CloseCode, _ message: String) {
        guard isOpen else { return close(code, message) }
        shard.hub.refusals.record(refusal(reason, code: Int(code.rawValue), message), now: shard.now)
        close(code, message)
    }

    private func refusal(_ reason: RefusalReason, code: Int, _ message: String) -> RefusalLog.Refusal {
        let known = countedTenant != nil
        return RefusalLog.Refusal(
            reason: reason, code: code, message: message, clientAddress: client,
            tenant: known ? principal.tenant : nil, subject: known ? principal.subject : nil,
            userAgent: userAgent)
    }
    var queuedBytes: Int { outbound.byteCount }

    // MARK: Readiness

    func handle(events: UInt32) {
        if events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
            readAvailable()
        }
        if events & EPOLLOUT.rawValue != 0, !isClosed {
            flush()
        }
    }

    private var isClosed: Bool { machine.isClosed }

    private func readAvailable() {
        // Level-triggered: a few reads per wake-up keep one busy client from starving the rest.
        for _ in 0..<4 {
            let result: IOResult<Int>
            do {
                result = try Socket.read(fd, into: shard.scratch)
            } catch {
                return terminate()
            }
            guard case .done(let count) = result else { return }
            guard count > 0 else { return terminate() }
            machine.heard(now: shard.now)
            received(UnsafeRawBufferPointer(rebasing: shard.scratch[..<count]))
            if isClosed { return }
            if count < shard.scratch.count { return }
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        switch machine.state {
        case .handshaking:
            head.append(contentsOf: bytes)
            readHead()
        case .open, .closing:
            guard reader != nil else { return }
            reader!.feed(bytes) { output in self.process(output) }
        case .closed:
            break
        }
    }

    // MARK: Upgrade

    private func readHead() {
        switch head.withUnsafeBytes({ UpgradeParser.parse($0) }) {
        case .needMore:
            return
        case .reject(let rejection):
            refuse(rejection, reason: RefusalReason(rejection: rejection))
        case .request(let request, let consumed):
            // Kept for the connection's life and listed to operators: bounded like the audit's.
            userAgent = request.headers["user-agent"].map { String($0.prefix(500)) }
            let admission = shard.admit(request, connection: self)
            switch admission {
            case .refused(let rejection, let reason):
                return refuse(rejection, reason: reason)
            case .awaitingToken:
                machine.upgraded(now: shard.now, awaitingToken: true)
            case .authenticated(let validUntil):
                machine.upgraded(now: shard.now, validUntil: validUntil)
            }
            mode = request.path.hasSuffix("/echo") ? .echo : .api
            let rest = Array(head[consumed...])
            head = []
            let agreed = shard.configuration.deflate.flatMap {
                PerMessageDeflate.accept(
                    offers: request.headers["sec-websocket-extensions"], maxWindowBits: $0.maxWindowBits)
            }
            deflate = agreed?.0
            // We always ask the client not to keep its context: no inflater outlives a message.
            reader = MessageReader(
                role: .server, maxMessageSize: shard.configuration.maxMessageSize,
                compression: agreed.map { _ in .init(peerKeepsContext: false) })
            enqueue(SharedFrame(HandshakeResponse.switchingProtocols(request, extensions: agreed?.response)))
            flush()
            if !rest.isEmpty { rest.withUnsafeBytes { received($0) } }
        }
    }

    private func refuse(_ rejection: UpgradeRejection, reason: RefusalReason) {
        shard.hub.refusals.record(refusal(reason, code: rejection.status, rejection.message), now: shard.now)
        head = []
        enqueue(SharedFrame(HandshakeResponse.rejection(rejection)))
        machine.refused(now: shard.now)
        shutdownAfterFlush = true
        flush()
    }

    // MARK: Frames

    private func process(_ output: MessageReader.Output) {
        switch output {
        case .message(let opcode, let payload):
            guard isOpen else { return }
            switch mode {
            case .echo: send(SharedFrame(opcode, payload: payload))
            case .api: shard.received(opcode, payload, from: self)
            }
        case .ping(let payload):
            if isOpen { send(SharedFrame(FrameEncoder.frame(.pong, payload))) }
        case .pong, .compressed:
            // `.compressed` never comes: the gateway's readers inflate for themselves.
            break
        case .close(let code, _):
            switch machine.peerClosed(now: shard.now, outboundEmpty: outbound.isEmpty) {
            case .echo:
                // The peer's status (none if it sent none), then we are done.
                shutdownAfterFlush = true
                send(SharedFrame(code.map { FrameEncoder.close($0) } ?? FrameEncoder.frame(.close, [])))
            case .terminate:
                terminate()
            case .ignore:
                break
            }
        case .fail(let code, let reason):
            close(code, reason)
        }
    }

    /// Starts the close handshake with `code` (a protocol failure, slow consumer, shutdown).
    func close(_ code: CloseCode, _ reason: String) {
        switch machine.closeRequested(now: shard.now) {
        case .none: return
        case .terminate: return terminate()
        case .sendClose: break
        }
        if code == .tryAgainLater { outbound.dropUnstarted() }
        enqueue(SharedFrame(FrameEncoder.close(code, reason: reason)))
        shutdownAfterFlush = true
        flush()
    }

    // MARK: Writing

    /// Queues `frame` and writes it now.
    func send(_ frame: SharedFrame) {
        enqueue(frame)
        flush()
    }

    /// Queues `frame` without writing (fan-out flushes once per batch): compressed when
    /// permessage-deflate was agreed, with the bytes every such subscriber shares.
    func enqueue(_ frame: SharedFrame) {
        guard !isClosed else { return }
        outbound.append(sentForm(of: frame))
    }

    /// `enqueue`, looking the compressed form up in `forms` first: a fan-out batch asks
    /// the frame's lock once per window, not once per subscriber.
    func enqueue(_ frame: SharedFrame, sharing forms: inout [DeflatedKey: SharedFrame]) {
        guard !isClosed else { return }
        guard let window = deflate?.serverCompressionWindow else { return outbound.append(frame) }
        let key = DeflatedKey(frame: ObjectIdentifier(frame), windowBits: window)
        if let known = forms[key] { return outbound.append(known) }
        let made = sentForm(of: frame)
        forms[key] = made
        outbound.append(made)
    }

    /// The frame as this connection gets it: compressed with its window when it agreed
    /// permessage-deflate, the compressed bytes shared with every such subscriber.
    private func sentForm(of frame: SharedFrame) -> SharedFrame {
        guard let window = deflate?.serverCompressionWindow, let settings = shard.configuration.deflate else {
            return frame
        }
        let metrics = shard.hub.metrics
        return frame.deflated(by: shard.deflater(windowBits: window), threshold: settings.threshold) {
            metrics.deflated("shared", bytesIn: $0, bytesOut: $1)
        }
    }

    /// Queues a page of a subscription's catch-up, in order. When the client let the
    /// server keep its context, the page is compressed as one stream (each event may refer
    /// to the ones before it: marker events repeat their field names and ids), by a
    /// compressor made for this page and dropped after it. Nothing else is queued between
    /// its frames, so the client's window holds exactly what ours did.
    func enqueueCatchUp(_ frames: [SharedFrame]) {
        guard !isClosed else { return }
        guard let deflate, deflate.serverContextTakeover, frames.count > 1,
            let window = deflate.serverCompressionWindow, let settings = shard.configuration.deflate
        else {
            for frame in frames { enqueue(frame) }
            return
        }
        let deflater = MessageDeflater(windowBits: window, keepsContext: true)
        var runs = 0
        var bytesIn = 0
        var bytesOut = 0
        for frame in frames {
            var sent = frame
            if let payload = frame.payload, let opcode = frame.opcode, payload.count >= settings.threshold {
                let compressed = deflater.compress(payload)
                sent = SharedFrame(FrameEncoder.frame(opcode, compressed, compressed: true))
                runs += 1; bytesIn += payload.count; bytesOut += compressed.count
            }
            outbound.append(sent)
        }
        shard.hub.metrics.deflated("catch_up", runs: runs, bytesIn: bytesIn, bytesOut: bytesOut)
    }

    /// Writes what the socket takes. A client that leaves more than the bound queued
    /// (with the live frames held behind a catch-up) is closed as too slow, without
    /// slowing anyone else; one whose socket drained gets its catch-up's next page.
    func flush() {
        guard !isClosed else { return }
        let drained: Bool
        do {
            drained = try outbound.write(to: fd)
        } catch {
            return terminate()
        }
        if machine.flushed(queuedBytes: outbound.byteCount + catchUps.heldBytes) {
            shard.slowConsumerClosed()
            return close(
                .tryAgainLater,
                "outbound buffer over \(shard.configuration.maxBufferedBytes) bytes: reconnect with since")
        }
        if drained {
            if watchingWritable {
                watchingWritable = false
                shard.loop.modify(fd, events: Epoll.readable)
            }
            if shutdownAfterFlush {
                shutdownAfterFlush = false
                Socket.shutdownWrite(fd)
            }
        } else if !watchingWritable {
            watchingWritable = true
            shard.loop.modify(fd, events: Epoll.readable | Epoll.writable)
        }
        if !catchUps.isEmpty { shard.askNextPage(for: self) }
    }

    // MARK: Time

    func tick(_ now: ContinuousClock.Instant) {
        switch machine.tick(now: now) {
        case .none: break
        case .ping: send(SharedFrame(FrameEncoder.frame(.ping, [])))
        case .terminate: terminate()
        case .unauthorized(let reason, let message): refuse(reason, closing: .unauthorized, message)
        }
    }

    /// Closes the descriptor now; the shard forgets the connection.
    func terminate() {
        guard machine.terminated() else { return }
        shard.removed(self)
        Glibc.close(fd)
    }
}

/// A frame and a window: the key of its compressed form within one fan-out batch.
struct DeflatedKey: Hashable {
    var frame: ObjectIdentifier
    var windowBits: Int
}

/// A user kept present in a work session by a `presence` op.
struct PresenceKey: Hashable, Sendable {
    var workSessionID: EntityID
    var user: String
}
