/// When a shard's acceptor listens, and when it says why it does not (issue 45: at the
/// descriptor ceiling the acceptor logged "out of file descriptors" and woke again at
/// once, 40,000-60,000 lines a second and half a core, until the process died).
///
/// - At `ceiling` open connections (the descriptor limit less a reserve kept for the
///   HTTP side, the pools and the logs) the listener is disarmed, and armed again once a
///   connection has gone: new clients wait in the kernel's backlog, nobody spins.
/// - When `accept` fails for want of descriptors anyway (EMFILE, ENFILE), the listener is
///   disarmed for `backoff`, which doubles up to `longestBackoff` while it keeps failing.
/// - Either says so at most once per `logInterval`, counting what it left out.
///
/// Pure, on any clock: `AcceptGateTests` drives it with a test clock.
struct AcceptGate<Instant: InstantProtocol> where Instant.Duration == Duration {
    let ceiling: Int
    var firstBackoff = Duration.milliseconds(100)
    var longestBackoff = Duration.seconds(2)
    var logInterval = Duration.seconds(1)

    enum State: Equatable {
        case listening
        /// Full: listens again once below the ceiling.
        case full
        /// Out of descriptors: listens again at `until`.
        case backingOff(until: Instant)
    }

    private(set) var state = State.listening
    private var backoff: Duration?
    private var lastLog: Instant?
    private var unlogged = 0

    init(ceiling: Int) {
        self.ceiling = ceiling
    }

    /// Before an accept: whether one more connection may come in now (`open` held).
    mutating func mayAccept(open: Int) -> Bool {
        guard state == .listening else { return false }
        if open >= ceiling {
            state = .full
            return false
        }
        return true
    }

    /// An accept succeeded: descriptors are there again.
    mutating func accepted() {
        backoff = nil
    }

    /// An accept failed for want of descriptors at `now`.
    mutating func outOfDescriptors(now: Instant) {
        let wait = backoff.map { min($0 * 2, longestBackoff) } ?? firstBackoff
        backoff = wait
        state = .backingOff(until: now.advanced(by: wait))
    }

    /// On each tick: whether to arm the listener again (`open` held now).
    mutating func tick(now: Instant, open: Int) -> Bool {
        switch state {
        case .listening:
            return false
        case .full:
            guard open < ceiling else { return false }
        case .backingOff(let until):
            guard now >= until, open < ceiling else { return false }
        }
        state = .listening
        return true
    }

    /// Whether a refusal at `now` is logged; when it is, `left out` lines were not since the last.
    mutating func log(now: Instant) -> (log: Bool, leftOut: Int) {
        if let lastLog, lastLog.duration(to: now) < logInterval {
            unlogged += 1
            return (false, 0)
        }
        lastLog = now
        defer { unlogged = 0 }
        return (true, unlogged)
    }
}
