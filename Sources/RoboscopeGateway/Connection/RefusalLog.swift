import Logging
import Metrics
import Synchronization

/// Every refused upgrade and every 4001 or 4003 close, counted by reason in
/// `roboscope_ws_refusals_total` and logged with who and why (tenant, subject, client
/// address, status or close code, reason), at most `--log-refusals-per-second` lines a
/// second for the whole gateway, then one line counting those left out.
final class RefusalLog: Sendable {
    /// One refusal, as its log line names it.
    struct Refusal {
        var reason: RefusalReason
        /// The HTTP status of a refused upgrade, or the close code.
        var code: Int
        var message: String
        var clientAddress: String
        var tenant: String?
        var subject: String?
        var userAgent: String?
    }

    private let logger: Logger
    private let counters: [RefusalReason: Counter]
    private let allowance: Mutex<LogAllowance<ContinuousClock.Instant>>

    init(logger: Logger, perSecond: Int) {
        self.logger = logger
        var counters: [RefusalReason: Counter] = [:]
        for reason in RefusalReason.allCases {
            let counter = Counter(label: "roboscope_ws_refusals_total", dimensions: [("reason", reason.rawValue)])
            counter.increment(by: 0)
            counters[reason] = counter
        }
        self.counters = counters
        allowance = Mutex(LogAllowance(perSecond: perSecond))
    }

    func record(_ refusal: Refusal, now: ContinuousClock.Instant) {
        counters[refusal.reason]?.increment()
        let (write, leftOut) = allowance.withLock { $0.take(now: now) }
        if let leftOut { sayLeftOut(leftOut) }
        guard write else { return }
        var fields: Logger.Metadata = [
            "reason": "\(refusal.reason.rawValue)", "code": "\(refusal.code)",
            "client_address": "\(refusal.clientAddress)",
            "detail": "\(refusal.message.prefix(200))",
        ]
        if let tenant = refusal.tenant { fields["tenant"] = "\(tenant)" }
        if let subject = refusal.subject { fields["subject"] = "\(subject)" }
        if let userAgent = refusal.userAgent { fields["user_agent"] = "\(userAgent.prefix(200))" }
        logger.warning(refusal.code >= 4000 ? "websocket closed" : "websocket upgrade refused", metadata: fields)
    }

    /// From the shards' ticks: says the count of a second that ended with lines left out.
    func tick(now: ContinuousClock.Instant) {
        if let leftOut = allowance.withLock({ $0.tick(now: now) }) { sayLeftOut(leftOut) }
    }

    private func sayLeftOut(_ count: Int) {
        logger.warning("websocket refusals left out of the log", metadata: ["lines": "\(count)"])
    }
}
