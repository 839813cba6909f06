import Foundation

/// Keeps a user present in a work session: a heartbeat every `interval` (well inside the
/// service's presence window, 30 s by default), sent again at once when the network
/// returns after a failed one, and a leave when stopped.
public actor PresenceKeeper {
    public nonisolated let workSessionID: UUID
    public nonisolated let user: String
    let client: RoboscopeClient
    let interval: Duration
    private var task: Task<Void, Never>?
    /// Heartbeats the service accepted.
    public private(set) var heartbeats = 0
    /// Whether the last heartbeat reached the service.
    public private(set) var isPresent = false

    /// Keeps `user` present in the session once started, heartbeating every `interval`.
    public init(client: RoboscopeClient, workSessionID: UUID, user: String, interval: Duration = .seconds(10)) {
        self.client = client
        self.workSessionID = workSessionID
        self.user = user
        self.interval = interval
    }

    /// Starts the heartbeats (the first one at once); calling it again changes nothing.
    public func start() {
        guard task == nil else { return }
        task = Task { await self.run() }
    }

    /// Stops the heartbeats and leaves the session.
    public func stop() async {
        task?.cancel()
        task = nil
        isPresent = false
        try? await client.retrying(.never).leave(workSessionID: workSessionID, user: user)
    }

    private func run() async {
        var random = SystemRandomNumberGenerator()
        var failures = 0
        // A failed heartbeat is retried by the loop's pace, not by the client's policy.
        let once = client.retrying(.never)
        while !Task.isCancelled {
            do {
                try await once.heartbeat(workSessionID: workSessionID, user: user)
                heartbeats += 1
                isPresent = true
                failures = 0
            } catch {
                isPresent = false
                failures += 1
            }
            // Offline: try again soon (backoff), so presence is announced again as soon as
            // the network is back; online: the regular pace.
            let wait =
                failures == 0
                ? interval : min(interval, client.configuration.reconnect.delay(forRetry: failures, using: &random))
            do { try await client.configuration.clock.sleep(for: wait) } catch { return }
        }
    }
}
