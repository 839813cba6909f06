/// A WebSocket connection's life, apart from its bytes: handshaking, open, closing,
/// closed; when silence earns a ping and when it ends the connection; when a queue
/// that does not drain makes the reader too slow to keep; whether the connection has
/// authenticated, and until when its token holds.
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

    /// Whom the connection may act for, with authentication on (docs/security.md).
    enum Authentication: Equatable {
        /// Upgraded without a token: the `auth` op must come before the deadline.
        case awaitingToken(deadline: Instant)
        /// A token (or no authentication) admits it until the instant, or for good.
        case valid(until: Instant?)
    }

    enum TickAction: Equatable {
        case none
        case ping
        case terminate
        /// Close with 4001: no token came in time, or the token expired.
        case unauthorized(RefusalReason, String)
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
    /// How long an upgrade without a token may wait for its `auth` op.
    static var authenticationTimeout: Duration { .seconds(10) }

    let pingInterval: Duration
    /// Bytes a reader may leave queued before it counts as too slow.
    let maxBufferedBytes: Int
    private(set) var state: State
    private var lastHeard: Instant
    private var pingSentAt: Instant?
    private(set) var authentication: Authentication = .valid(until: nil)

    init(now: Instant, pingInterval: Duration, maxBufferedBytes: Int) {
        self.pingInterval = pingInterval
        self.maxBufferedBytes = maxBufferedBytes
        state = .handshaking(since: now)
        lastHeard = now
    }

    var isOpen: Bool { state == .open }
    var isClosed: Bool { state == .closed }
    var isHandshaking: Bool { if case .handshaking = state { return true } else { return false } }
    /// Whether messages other than `auth` may be served.
    var isAuthenticated: Bool { if case .valid = authentication { return true } else { return false } }

    // MARK: What happened

    /// Bytes arrived: the peer is alive, whatever they were.
    mutating func heard(now: Instant) {
        lastHeard = now
        pingSentAt = nil
    }

    /// The upgrade succeeded. `awaitingToken`: it carried no token, and authentication
    /// is on; else the token (if any) holds until `validUntil`.
    mutating func upgraded(now: Instant, awaitingToken: Bool = false, validUntil: Instant? = nil) {
        guard isHandshaking else { return }
        state = .open
        authentication =
            awaitingToken
            ? .awaitingToken(deadline: now.advanced(by: Self.authenticationTimeout))
            : .valid(until: validUntil)
    }

    /// An `auth` op was accepted: the new token holds until `validUntil` (nil: for good).
    mutating func authenticated(validUntil: Instant?) {
        authentication = .valid(until: validUntil)
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

    /// A write left `queuedBytes` behind (with what waits behind a catch-up); true when
    /// the reader is too slow to keep (the caller closes it with 1013).
    mutating func flushed(queuedBytes: Int) -> Bool {
        isOpen && queuedBytes > maxBufferedBytes
    }

    /// The earliest instant at which `tick` may act (nil once closed): before it every
    /// tick answers `.none`, so a loop ticks the connection then and not before.
    var nextDeadline: Instant? {
        switch state {
        case .handshaking(let since):
            return since.advanced(by: Self.handshakeTimeout)
        case .open:
            // Silence earns a ping after `pingInterval`; an unanswered ping ends it then.
            var next = (pingSentAt ?? lastHeard).advanced(by: pingInterval)
            switch authentication {
            case .awaitingToken(let deadline): next = min(next, deadline)
            case .valid(let until?): next = min(next, until)
            case .valid(nil): break
            }
            return next
        case .closing(let deadline):
            return deadline
        case .closed:
            return nil
        }
    }

    /// Time passed.
    mutating func tick(now: Instant) -> TickAction {
        switch state {
        case .handshaking(let since):
            return since.duration(to: now) > Self.handshakeTimeout ? .terminate : .none
        case .open:
            switch authentication {
            case .awaitingToken(let deadline) where now > deadline:
                return .unauthorized(
                    .missingToken, "no auth op within \(Self.authenticationTimeout.components.seconds) s of the upgrade"
                )
            case .valid(let until?) where now >= until:
                return .unauthorized(.expired, "token expired")
            default:
                break
            }
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
