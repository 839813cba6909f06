import Foundation
import Testing
import RoboscopeKit
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Cancels that land while the answer is being delivered, against the real server.
@Suite struct CancelRaceTests {
    /// swift-corelibs-foundation's `URLSession.data(for:)` deadlocked here: its cancel
    /// waited for the session's work queue while the runtime held the task's status lock,
    /// and the work queue, resuming the finished task, waited for that lock. With it, this
    /// harness wedged the whole test process within 1 to 37 rounds in 3 runs out of 3;
    /// the kit's `URLSessionCall` ran 3,000 rounds. 200 here.
    @Test func cancelsThatRaceTheAnswerNeverWedgeTheSession() async throws {
        let server = try await ServerProcess(databaseURL: try await TestDatabase.fresh("kit_cancel_race"))
        defer { server.stopWithoutWaiting() }
        let transport = URLSessionHTTPTransport(session: URLSession(configuration: .ephemeral))
        let request = HTTPRequestData(method: "GET", url: URL(string: "http://127.0.0.1:\(server.port)/healthz")!)
        // How long an answer takes here, so that the cancels land around it.
        let started = ContinuousClock.now
        _ = try await transport.send(request)
        let answer = max(1, (ContinuousClock.now - started).components.attoseconds / 1_000_000_000_000)
        var generator = SystemRandomNumberGenerator()
        // A wedged session takes the cooperative pool with it, and then no Swift timeout
        // can fire (the old call hung this test for good): a plain thread ends the
        // process with a message instead.
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            guard finished.wait(timeout: .now() + 120) == .timedOut else { return }
            FileHandle.standardError.write(Data("CancelRaceTests: the rounds did not end within 120 s: the URLSession is wedged\n".utf8))
            exit(70)
        }
        defer { finished.signal() }
        for round in 0..<200 {
            let call = Task { try await transport.send(request) }
            try await Task.sleep(for: .microseconds(Int64.random(in: 0...(2 * answer), using: &generator)))
            call.cancel()
            // Bounded without polling: under the parallel suite a poll's sleep made each round
            // take 0.7 s.
            try await FirstOutcome<Void>.bounded(
                by: .seconds(10), on: SystemClock(), timeout: { TestFailure("round \(round) did not end within 10 s") },
                cancelled: { CancellationError() }
            ) { _ = try? await call.value }
        }
        // And the session still answers.
        #expect(try await transport.send(request).status == 200)
    }
}
