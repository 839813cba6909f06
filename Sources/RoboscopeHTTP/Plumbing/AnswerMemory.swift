import Metrics
import RoboscopeDomain
import Synchronization

/// The bytes of answers this process has handed to its HTTP connections and the sockets
/// have not taken yet, against `--response-memory` (issue 45: 150 large answers nobody
/// read took the server from 679 MiB to 2 GiB). Past the budget a new large answer is
/// refused with 503 `overloaded` (AnswerBudgetMiddleware) instead of being queued, and
/// an answer whose client stops reading is cut after `--send-timeout`
/// (AnswerDrainHandler); small answers are always sent.
public final class AnswerMemory: Sendable {
    /// Bytes past which an answer is large: smaller ones cost less than their request.
    public static let largeAnswer = 64 << 10

    public let budget: Int
    private let pending = Atomic<Int>(0)
    private let gauge = Gauge(label: "roboscope_http_answer_bytes_pending")
    private let refused = Counter(label: "roboscope_http_answers_refused_total")
    private let cut = Counter(label: "roboscope_http_answers_cut_total")

    public init(budget: Int = 256 << 20) {
        self.budget = budget
        gauge.record(0)
        refused.increment(by: 0)
        cut.increment(by: 0)
    }

    /// Bytes waiting for their sockets now.
    public var bytesPending: Int { pending.load(ordering: .relaxed) }

    func hold(_ bytes: Int) {
        gauge.record(pending.wrappingAdd(bytes, ordering: .relaxed).newValue)
    }

    func release(_ bytes: Int) {
        gauge.record(pending.wrappingSubtract(bytes, ordering: .relaxed).newValue)
    }

    /// Whether an answer of `bytes` may be sent now: a small one always, a large one
    /// while the unsent answers are under the budget (which one answer may overshoot, by
    /// at most a page: an answer larger than the budget is still served when it is the
    /// only one). Counts the refusal when not.
    func admits(_ bytes: Int) -> Bool {
        guard bytes > Self.largeAnswer, bytesPending >= budget else { return true }
        refused.increment()
        return false
    }

    func countCut() { cut.increment() }
}
