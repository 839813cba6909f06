import Instrumentation
import RoboscopeWire
import ServiceContextModule

/// A write's trace context as the process's instrument sees it (W3C Trace Context): the
/// one stored with the write's events, so that their delivery continues the write's trace.
/// With no tracing set up (the default no-op instrument), there is none.
public enum TraceContext {
    /// The `traceparent` of the current span (the task's `ServiceContext`), nil when the
    /// instrument records none.
    public static func current() -> TraceParent? {
        guard let context = ServiceContext.current else { return nil }
        var headers: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &headers, using: HeaderInjector())
        return headers["traceparent"].flatMap(TraceParent.init)
    }

    /// A context whose parent is the span `traceParent` names: for a span that continues
    /// a stored write's trace in another thread (the delivery to subscribers).
    public static func context(continuing traceParent: TraceParent) -> ServiceContext {
        var context = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(
            ["traceparent": traceParent.header], into: &context, using: HeaderExtractor())
        return context
    }

    private struct HeaderInjector: Injector {
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
            carrier[key] = value
        }
    }

    private struct HeaderExtractor: Extractor {
        func extract(key: String, from carrier: [String: String]) -> String? {
            carrier[key]
        }
    }
}
