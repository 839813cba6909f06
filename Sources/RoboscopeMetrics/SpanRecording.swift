import Synchronization
import Tracing

/// Whether this process records spans: turned on once at start by the executable when
/// it sets up an exporter (`OTEL_EXPORTER_OTLP_ENDPOINT`). Off, the spans around each
/// database job, Redis job and append are not made at all: no span, no task-local
/// context, so tracing unset leaves the write path as it was before tracing.
public enum SpanRecording {
    private static let on = Atomic<Bool>(false)

    public static var isOn: Bool { on.load(ordering: .relaxed) }

    public static func turnOn() { on.store(true, ordering: .relaxed) }

    /// `withSpan` when spans are recorded; else `body` with a span that records nothing.
    public static func withSpan<T>(
        _ name: String, ofKind kind: SpanKind = .internal, _ body: (any Span) async throws -> T
    ) async throws -> T {
        guard isOn else { return try await body(NoOpTracer.NoOpSpan(context: .topLevel)) }
        return try await Tracing.withSpan(name, ofKind: kind) { span in try await body(span) }
    }
}
