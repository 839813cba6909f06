/// A WebSocket connection's life, apart from its bytes: handshaking, open, closing,
/// closed; when silence earns a ping and when it ends the connection; when a queue
/// that does not drain makes the reader too slow to keep.
///
/// Pure: `Connection` tells it what happened, passing the time in, and carries out
/// the action it gets back (swift-nio's and postgres-nio's shape). Tests drive it with
/// any instants they like.
struct ConnectionStateMachine<Instant: InstantProtocol> where Instant.Duration == Duration {
    enum State: Equatable {
        /// Reading the upgrade request.
        case handshaking(since: Instant)
        case open
        /// Our close frame (or refusal) is queued or sent; we wait for the peer's, or
        /// end of stream, until the deadline.
        case closing(deadline: Instant)
        /// The descriptor is closed.
        case closed
    }

    enum TickAction: Equatable {
        case none
        case ping
        case terminate
    }

    enum PeerCloseAction: Equatable {
        /// The peer started the close: answer with its status, then end.
        case echo
        /// The peer answered our close and nothing is left to write: end now.
        case terminate
        case ignore
    }

    enum CloseAction: Equatable {
        case none
        /// Queue our close frame.
        case sendClose
        /// Not upgraded yet: there is no one to say goodbye to.
        case terminate
    }

    static var handshakeTimeout: Duration { .seconds(10) }
    static var closingTimeout: Duration { .seconds(2) }

    let pingInterval: Duration
    /// Bytes a reader may leave queued before it counts as too slow.
    let maxBufferedBytes: Int
    private(set) var state: State
    private var lastHeard: Instant
    private var pingSentAt: Instant?
    /// Bytes of subscription catch-ups still allowed on top of the bound: a replay is
    /// bounded by `maxCatchUpEvents`, and must not count as a slow reader.
    private(set) var catchUpAllowance = 0

    init(now: Instant, pingInterval: Duration, maxBufferedBytes: Int) {
        self.pingInterval = pingInterval
        self.maxBufferedBytes = maxBufferedBytes
        state = .handshaking(since: now)
        lastHeard = now
    }

    var isOpen: Bool { state == .open }
    var isClosed: Bool { state == .closed }
    var isHandshaking: Bool { if case .handshaking = state { return true } else { return false } }

    // MARK: What happened

    /// Bytes arrived: the peer is alive, whatever they were.
    mutating func heard(now: Instant) {
        lastHeard = now
        pingSentAt = nil
    }

    mutating func upgraded() {
        guard isHandshaking else { return }
        state = .open
    }

    /// The upgrade was refused; the refusal is queued.
    mutating func refused(now: Instant) {
        guard isHandshaking else { return }
        state = .closing(deadline: now.advanced(by: Self.closingTimeout))
    }

    /// The peer's close frame arrived.
    mutating func peerClosed(now: Instant, outboundEmpty: Bool) -> PeerCloseAction {
        switch state {
        case .open:
            state = .closing(deadline: now.advanced(by: Self.closingTimeout))
            return .echo
        case .closing:
            return outboundEmpty ? .terminate : .ignore
        case .handshaking, .closed:
            return .ignore
        }
    }

    /// We want to close (a protocol failure, a slow reader, shutdown).
    mutating func closeRequested(now: Instant) -> CloseAction {
        switch state {
        case .open:
            // Closing before the close frame is queued: a slow-reader check while
            // queueing it applies to open connections only, so it cannot close twice.
            state = .closing(deadline: now.advanced(by: Self.closingTimeout))
            return .sendClose
        case .handshaking:
            return .terminate
        case .closing, .closed:
            return .none
        }
    }

    mutating func allowCatchUp(bytes: Int) {
        catchUpAllowance += bytes
    }

    /// A write left `queuedBytes` behind; true when the reader is too slow to keep
    /// (the caller closes it with 1013).
    mutating func flushed(queuedBytes: Int) -> Bool {
        catchUpAllowance = min(catchUpAllowance, queuedBytes)
        return isOpen && queuedBytes > maxBufferedBytes + catchUpAllowance
    }

    /// Time passed.
    mutating func tick(now: Instant) -> TickAction {
        switch state {
        case .handshaking(let since):
            return since.duration(to: now) > Self.handshakeTimeout ? .terminate : .none
        case .open:
            if let sent = pingSentAt {
                return sent.duration(to: now) > pingInterval ? .terminate : .none
            }
            if lastHeard.duration(to: now) > pingInterval {
                pingSentAt = now
                return .ping
            }
            return .none
        case .closing(let deadline):
            return now > deadline ? .terminate : .none
        case .closed:
            return .none
        }
    }

    /// The descriptor is about to close; false if it already was.
    mutating func terminated() -> Bool {
        guard !isClosed else { return false }
        state = .closed
        return true
    }
}
