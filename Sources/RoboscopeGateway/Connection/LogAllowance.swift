/// How many lines a second a noisy kind of line may take (`--log-refusals-per-second`):
/// the first `perSecond` of each second are written, the rest left out and counted, and
/// the count is said once, when the next second begins. A flood of refused tokens costs
/// a counter, not a disk. Pure: the caller passes the time.
struct LogAllowance<Instant: InstantProtocol> where Instant.Duration == Duration {
    let perSecond: Int
    private var windowStart: Instant?
    private var written = 0
    private var leftOut = 0

    init(perSecond: Int) {
        self.perSecond = max(1, perSecond)
    }

    /// Whether one more line may be written at `now`, and how many lines the second that
    /// just ended left out (nil: none, or that second is not over).
    mutating func take(now: Instant) -> (write: Bool, leftOutBefore: Int?) {
        let ended = rollOver(now: now)
        if written < perSecond {
            written += 1
            return (true, ended)
        }
        leftOut += 1
        return (false, ended)
    }

    /// At a tick: the count of a second that ended with lines left out, once.
    mutating func tick(now: Instant) -> Int? {
        rollOver(now: now)
    }

    private mutating func rollOver(now: Instant) -> Int? {
        guard let start = windowStart, now < start.advanced(by: .seconds(1)) else {
            let ended = leftOut > 0 ? leftOut : nil
            windowStart = now
            written = 0
            leftOut = 0
            return ended
        }
        return nil
    }
}
