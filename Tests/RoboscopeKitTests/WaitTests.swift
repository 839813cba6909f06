import Foundation
import Testing
@testable import RoboscopeKit
import RoboscopeKitTesting

/// Every wait in the kit ends: with its result, with the error that stopped it, or at
/// once when its task is cancelled. The primitive first, then `synchronized()` over
/// thousands of seeded interleavings of the in-memory service.
@Suite struct WaitTests {
    /// A change signalled between a waiter's look and its wait is never lost, whatever
    /// the order the two tasks run in.
    @Test func aSignalBetweenTheLookAndTheWaitIsNotLost() async throws {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<5_000 {
            let signal = ChangeSignal()
            let changed = Flag()
            let waiterYields = Int(generator.next() % 6)
            let signallerYields = Int(generator.next() % 6)
            let waiter = Task {
                while true {
                    let seen = signal.generation
                    if await changed.isSet { return }
                    for _ in 0..<waiterYields { await Task.yield() }
                    try await signal.wait(after: seen)
                }
            }
            let signaller = Task {
                for _ in 0..<signallerYields { await Task.yield() }
                await changed.set()
                signal.signal()
            }
            await signaller.value
            try await within(5, "the wait to see the signal") { try await waiter.value }
        }
    }

    @Test func aCancelledWaitEndsAtOnce() async throws {
        for early in [true, false] {
            let signal = ChangeSignal()
            let waiter = Task {
                if early { withUnsafeCurrentTask { $0?.cancel() } }
                try await signal.wait(after: signal.generation)
            }
            if !early { try await Task.sleep(for: .milliseconds(5)) }
            let started = ContinuousClock.now
            waiter.cancel()
            await #expect(throws: CancellationError.self) { try await waiter.value }
            // Nothing but the cancel happens: no signal, no event, no clock moving. The bound
            // is a guard for a loaded CI machine (the unit suites run side by side; a CI run
            // saw 0.3 s), not the figure: unloaded it ends in about a millisecond.
            #expect(ContinuousClock.now - started < Self.promptGuard)
        }
    }

    /// How long "at once" may take on a loaded two-core CI machine.
    static let promptGuard: Duration = .seconds(2)

    @Test func finishEndsEveryWaitNowAndLater() async throws {
        let signal = ChangeSignal()
        let seen = signal.generation
        let waiter = Task { try await signal.wait(after: seen) }
        signal.finish()
        try await within(5) { try await waiter.value }
        try await within(5) { try await signal.wait(after: signal.generation) }
    }

    /// The reproduction of the lost wake-up: one write, then `synchronized()`, over
    /// 2,000 seeded interleavings of the in-memory service (it hung 5 runs in 20). It
    /// also found a second hang: a write answered while the first snapshot was being
    /// read had its event inside the snapshot, so the event it waited for never came.
    @Test func synchronizedEndsUnderEverySeededInterleaving() async throws {
        for seed in UInt64(0)..<2_000 {
            let service = InMemoryService()
            await service.interleave(seed: seed)
            let session = await service.addWorkSession().id
            // The system clock: nothing here waits on a retry unless a run fails.
            let client = RoboscopeClient(
                RoboscopeConfiguration(
                    baseURL: URL(string: "http://in-memory")!, userID: "tester",
                    reconnect: RetryPolicy(base: .milliseconds(1), cap: .milliseconds(5)),
                    http: service.http, webSocket: service.webSocket))
            let offline = OfflineWorkSession(client: client, store: try OfflineStore(path: nil), workSessionID: session)
            await offline.start()
            try await offline.create(
                NewMarker(workSessionID: session, label: "seed \(seed)", corners: OfflineTests.quad(0)))
            if seed % 2 == 0 { _ = await service.externalCreate(in: session) }
            try await within(10, "synchronized() with seed \(seed)") { try await offline.synchronized() }
            #expect(await offline.markers(refresh: false).pendingWrites == 0)
            await offline.stop()
        }
    }

    /// Waiting for writes that cannot be sent (the service is unreachable) ends with
    /// `RoboscopeError.cancelled` on the cancel alone.
    @Test func synchronizedEndsPromptlyWhenCancelled() async throws {
        let service = InMemoryService()
        let session = await service.addWorkSession().id
        let client = makeClient(service, clock: ManualClock())
        let offline = OfflineWorkSession(client: client, store: try OfflineStore(path: nil), workSessionID: session)
        await service.setReachable(false)
        await offline.start()
        try await offline.create(NewMarker(workSessionID: session, label: "offline", corners: OfflineTests.quad(0)))
        let waiting = Task { try await offline.synchronized() }
        try await within(10, "synchronized() waits") {
            while await offline.waitingForChanges == 0 { try await Task.sleep(for: .milliseconds(1)) }
        }
        let started = ContinuousClock.now
        waiting.cancel()
        await #expect(throws: RoboscopeError.cancelled) { try await waiting.value }
        #expect(ContinuousClock.now - started < Self.promptGuard, "the cancel alone ends it")
        await offline.stop()
    }
}

/// `FirstOutcome`, the race a request's attempt runs in: the first outcome wins, the
/// waiter is resumed once, and nothing waits for a loser to notice it lost.
extension WaitTests {
    /// Whatever order an answer, a timeout and a cancel land in, the waiter gets the
    /// first one, once; a racer started after it is cancelled at once.
    @Test func theFirstOutcomeWinsUnderEverySeededInterleaving() async throws {
        var generator = SplitMix64(seed: 11)
        for _ in 0..<3_000 {
            let first = FirstOutcome<Int>()
            let landed = Landed()
            let yields = (0..<3).map { _ in Int(generator.next() % 5) }
            let waitFirst = generator.next() % 2 == 0
            let racers = (0..<3).map { number in
                Task {
                    for _ in 0..<yields[number] { await Task.yield() }
                    if first.settle(.success(number)) { await landed.land(number) }
                }
            }
            if waitFirst { await Task.yield() }
            let got = try await within(5, "the waiter resumed") {
                try await withCheckedThrowingContinuation { first.await($0) }
            }
            for racer in racers { await racer.value }
            #expect(await landed.order == [got], "exactly one outcome counted, and it is the one the waiter got")
            let late = Flag()
            first.race {
                try? await Task.sleep(for: .seconds(3600))
                await late.set()
            }
            // Cancelled at once: it would otherwise sleep for an hour.
            try await within(5, "a late racer cancelled") {
                while await !late.isSet { await Task.yield() }
            }
        }
    }

    /// An operation that never ends, even when cancelled, does not hold the call: the
    /// timeout on the kit's clock ends it, and so does the caller's cancel.
    @Test func aBoundedOperationEndsWithoutWaitingForAnOperationThatIgnoresItsCancel() async throws {
        let clock = ManualClock()
        let deaf = DeafTransport()
        let timedOut = Task {
            try await FirstOutcome<HTTPResponseData>.bounded(
                by: .seconds(5), on: clock, timeout: { TimedOut() }, cancelled: { CancellationError() }
            ) {
                try await deaf.send(HTTPRequestData(method: "GET", url: URL(string: "http://deaf")!))
            }
        }
        await clock.waitForSleepers()
        await clock.advance(by: .seconds(5))
        await #expect(throws: TimedOut.self) { try await within(5) { try await timedOut.value } }

        let cancelled = Task {
            try await FirstOutcome<HTTPResponseData>.bounded(
                by: nil, on: clock, timeout: { TimedOut() }, cancelled: { CancellationError() }
            ) {
                try await deaf.send(HTTPRequestData(method: "GET", url: URL(string: "http://deaf")!))
            }
        }
        try await within(5, "the second send") { while await deaf.sent.value < 2 { await Task.yield() } }
        let started = ContinuousClock.now
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(ContinuousClock.now - started < Self.promptGuard)
        // Both sends are still running: nobody waited for them.
        #expect(deaf.open == 2)
    }

    struct TimedOut: Error {}
}

/// The racers whose outcome counted.
actor Landed {
    private(set) var order: [Int] = []
    func land(_ number: Int) { order.append(number) }
}
