import Foundation
import RoboscopeKit
import RoboscopeKitTesting

/// A client of an in-memory service, with a manual clock.
func makeClient(
    _ service: InMemoryService, clock: ManualClock, user: String? = "tester",
    retry: RetryPolicy = RetryPolicy(base: .milliseconds(100), cap: .seconds(2), attempts: 4)
) -> RoboscopeClient {
    RoboscopeClient(
        RoboscopeConfiguration(
            baseURL: URL(string: "http://in-memory")!, userID: user, retry: retry,
            reconnect: RetryPolicy(base: .milliseconds(100), cap: .seconds(1)),
            // No request timeout: its sleeps would be among the ones a test drives.
            http: service.http, webSocket: service.webSocket, clock: clock, requestTimeout: nil
        ))
}

struct Timeout: Error, CustomStringConvertible {
    let description: String
}

/// Awaits `body`, failing after `seconds` of real time: a guard against a hang, not a
/// wait for something to happen.
func within<T: Sendable>(
    _ seconds: Double = 10, _ what: String = "", _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    // Unstructured, so that a wait that ignores cancellation cannot hold the test.
    let work = Task { try await body() }
    let outcome = OneShot<Result<T, any Error>>()
    Task { await outcome.set(await work.result) }
    Task {
        try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
        await outcome.set(.failure(Timeout(description: "timed out after \(seconds) s: \(what)")))
    }
    let result = await outcome.value()
    work.cancel()
    return try result.get()
}

/// A value set once, awaited by one.
actor OneShot<Value: Sendable> {
    private var stored: Value?
    private var waiter: CheckedContinuation<Value, Never>?

    func set(_ value: Value) {
        guard stored == nil else { return }
        stored = value
        waiter?.resume(returning: value)
        waiter = nil
    }

    func value() async -> Value {
        if let stored { return stored }
        return await withCheckedContinuation { waiter = $0 }
    }
}

/// Reads events from a live topic into an array the test can wait on.
actor EventLog {
    private(set) var events: [TopicEvent] = []
    private(set) var states: [ConnectionState] = []
    private(set) var failure: (any Error)?
    private var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    func record(_ event: TopicEvent) {
        events.append(event)
        wake()
    }

    func record(_ state: ConnectionState) {
        states.append(state)
        wake()
    }

    func fail(_ error: any Error) {
        failure = error
        wake()
    }

    private func wake() {
        let ready = waiters.filter { events.count >= $0.count }
        waiters.removeAll { events.count >= $0.count }
        ready.forEach { $0.continuation.resume() }
    }

    func waitForEvents(_ count: Int) async {
        if events.count >= count { return }
        await withCheckedContinuation { waiters.append((count, $0)) }
    }

    /// Follows `live` until cancelled.
    nonisolated func consume(_ live: LiveTopic) -> Task<Void, Never> {
        let states = Task { for await state in live.states { await self.record(state) } }
        return Task {
            do {
                for try await event in live.events { await self.record(event) }
            } catch {
                await self.fail(error)
            }
            states.cancel()
        }
    }
}

/// The values a stream gave, in order, waited on by condition.
actor ValueLog<Value: Sendable> {
    private(set) var values: [Value] = []
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func add(_ value: Value) {
        values.append(value)
        let ready = waiters
        waiters = []
        ready.forEach { $0.resume() }
    }

    /// Returns once `condition` holds for all the values so far.
    func wait(until condition: ([Value]) -> Bool) async {
        while !condition(values) { await withCheckedContinuation { waiters.append($0) } }
    }

    /// Returns once `condition` holds for the last value.
    func wait(untilLast condition: (Value) -> Bool) async {
        await wait(until: { $0.last.map(condition) ?? false })
    }
}
