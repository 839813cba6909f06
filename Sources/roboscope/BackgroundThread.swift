import ServiceLifecycle

/// A component with a thread of its own (the append notifier, the change listener) as a
/// member of the service group: started by `run`, stopped and joined on graceful
/// shutdown or cancellation. The group stops services in reverse order, so one listed
/// before the API server outlives its in-flight requests.
struct BackgroundThread: Service {
    let start: @Sendable () -> Void
    let stop: @Sendable () async -> Void

    func run() async throws {
        start()
        try? await gracefulShutdown()
        await stop()
    }
}
