import Logging
import Metrics

/// swift-otel's own log (its diagnostic logger), passed on to the process's, with the
/// spans it lost counted where an operator looks (`roboscope_trace_spans_lost_total`,
/// by `reason`): `queue_full` when spans ended faster than they were exported and the
/// bounded queue (`OTEL_BSP_MAX_QUEUE_SIZE`) refused them, `export_failed` when a batch
/// could not be delivered (the collector answered an error, or is gone). swift-otel says
/// both only in its log ("Spans were dropped ...", with `dropped_count`; "Failed to export
/// batch.", with `batch_size`); a request never waits for either.
struct LostSpanCounter: LogHandler {
    var forwarding: any LogHandler

    static let queueFull = Counter(label: "roboscope_trace_spans_lost_total", dimensions: [("reason", "queue_full")])
    static let exportFailed = Counter(
        label: "roboscope_trace_spans_lost_total", dimensions: [("reason", "export_failed")])

    /// A logger for swift-otel that counts into the series above and logs as `logger` does.
    static func logger(forwardingTo logger: Logger) -> Logger {
        // Registered at zero: a dashboard shows 0 before the first loss.
        queueFull.increment(by: 0)
        exportFailed.increment(by: 0)
        return Logger(label: "otel") { _ in LostSpanCounter(forwarding: logger.handler) }
    }

    func log(event: LogEvent) {
        let metadata = event.metadata ?? [:]
        if event.message.description.hasPrefix("Spans were dropped"),
            let count = metadata["dropped_count"].flatMap({ Int("\($0)") })
        {
            Self.queueFull.increment(by: count)
        } else if event.message.description.hasPrefix("Failed to export batch"),
            let count = (metadata["batch_size"] ?? self.metadata["batch_size"]).flatMap({ Int("\($0)") })
        {
            Self.exportFailed.increment(by: count)
        }
        forwarding.log(event: event)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { forwarding[metadataKey: key] }
        set { forwarding[metadataKey: key] = newValue }
    }

    var metadata: Logger.Metadata {
        get { forwarding.metadata }
        set { forwarding.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { forwarding.logLevel }
        set { forwarding.logLevel = newValue }
    }
}
