import Logging
import OTel
import RoboscopeMetrics
import ServiceLifecycle
import Tracing

/// Traces, exported over OTLP/HTTP (protobuf) by swift-otel when the standard
/// OpenTelemetry variables ask for them (docs/operations.md, "Tracing"): an endpoint
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), unless
/// `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. The other `OTEL_*` variables
/// (sampler, batch processor, resource attributes, headers) are swift-otel's to read.
/// Without an endpoint, nothing is set up: the API's default tracer records nothing,
/// and no span is made where the code asks whether tracing is on.
enum TracingSetup {
    static func isRequested(_ environment: [String: String]) -> Bool {
        let endpoint = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].contains {
            !(environment[$0] ?? "").isEmpty
        }
        return endpoint && environment["OTEL_SDK_DISABLED"]?.lowercased() != "true"
            && environment["OTEL_TRACES_EXPORTER"]?.lowercased() != "none"
    }

    /// Makes the tracer the process's and returns the service that exports its spans
    /// (first in the group, so that it stops last and sends what the others ended).
    /// swift-otel's own warnings go to `logger`, the spans it lost counted
    /// (`LostSpanCounter`).
    static func start(logger: Logger) throws -> any Service {
        var configuration = OTel.Configuration.default
        configuration.diagnosticLogger = .custom(LostSpanCounter.logger(forwardingTo: logger))
        // Its warnings (lost spans) only: not a line per setting it read at start.
        configuration.diagnosticLogLevel = .warning
        configuration.serviceName = "roboscope"
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        SpanRecording.turnOn()
        return backend.service
    }
}
