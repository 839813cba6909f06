import Foundation
import Testing
import RoboscopeKit
#if canImport(Glibc)
import Glibc
#endif

/// Cancels that land while the answer is being delivered, and the socket transport's
/// waits, against the real server and against sockets that never answer.
@Suite struct CancelRaceTests {
    /// The history of this test is why Linux does not use URLSession for `http://`:
    /// swift-corelibs-foundation's `URLSession.data(for:)` wedged this harness within 1 to
    /// 37 rounds in 3 runs out of 3 (swift-corelibs-foundation#5412), and a data task with
    /// a completion handler and a cancel on a queue of its own passed 3,000 rounds here
    /// but trapped once and wedged once under CI's parallel suite. The default transport
    /// (the socket one, on Linux) only shuts its socket down on a cancel.
    @Test func cancelsThatRaceTheAnswerNeverWedgeTheTransport() async throws {
        let server = try await ServerProcess(databaseURL: try await TestDatabase.fresh("kit_cancel_race"))
        defer { server.stopWithoutWaiting() }
        let transport = defaultHTTPTransport()
        let request = HTTPRequestData(method: "GET", url: URL(string: "http://127.0.0.1:\(server.port)/healthz")!)
        // How long an answer takes here, so that the cancels land around it.
        let started = ContinuousClock.now
        _ = try await transport.send(request)
        let answer = max(1, (ContinuousClock.now - started).components.attoseconds / 1_000_000_000_000)
        var generator = SystemRandomNumberGenerator()
        // A wedged transport can take the cooperative pool with it, and then no Swift
        // timeout can fire: a plain thread ends the process with a message instead. The
        // suite runs alone (deploy/local/test): other suites' set-up holds the pool for
        // seconds, which made 200 rounds take over 120 s without any wedge.
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            guard finished.wait(timeout: .now() + 120) == .timedOut else { return }
            FileHandle.standardError.write(
                Data(
                    """
                    CancelRaceTests: the rounds did not end within 120 s: the transport is wedged, or the pool \
                    starved\n
                    """
                    .utf8))
            exit(70)
        }
        defer { finished.signal() }
        var outcomes = (answered: 0, cancelled: 0)
        for round in 0..<200 {
            let call = Task { try await transport.send(request) }
            try await Task.sleep(for: .microseconds(Int64.random(in: 0...(2 * answer), using: &generator)))
            call.cancel()
            // Bounded without polling: under the parallel suite a poll's sleep made each round
            // take 0.7 s.
            let outcome = try await FirstOutcome<Result<HTTPResponseData, any Error>>.bounded(
                by: .seconds(10), on: SystemClock(), timeout: { TestFailure("round \(round) did not end within 10 s") },
                cancelled: { CancellationError() }
            ) { await call.result }
            switch outcome {
            case .success(let response):
                #expect(response.status == 200)
                outcomes.answered += 1
            case .failure(let error):
                #expect(error as? RoboscopeError == .cancelled, "round \(round): \(error)")
                outcomes.cancelled += 1
            }
        }
        // And the transport still answers.
        #expect(try await transport.send(request).status == 200)
        print("CancelRaceTests: \(outcomes.answered) answered, \(outcomes.cancelled) cancelled")
    }

    #if canImport(Glibc)
    /// A server for one request: it reads the request, sends `answer` (nothing: a network
    /// that accepts and stays silent), and then holds the connection open until it goes.
    final class HoldingServer: @unchecked Sendable {
        let port: Int
        private let listener: Int32
        private let released = DispatchSemaphore(value: 0)
        private let heard = Flag()
        /// The request arrived and `answer` is on the wire.
        var answered: Bool { heard.isSet }

        final class Flag: @unchecked Sendable {
            private let lock = NSLock()
            private var value = false
            var isSet: Bool { lock.withLock { value } }
            func set() { lock.withLock { value = true } }
        }

        init(answer: String = "") throws {
            port = try FreePort.pick()
            listener = try Loopback.listener(port: port, what: "holding server")
            let (listener, released, heard) = (listener, released, heard)
            Thread.detachNewThread {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                var request = [UInt8](repeating: 0, count: 4096)
                _ = read(connection, &request, request.count)
                let bytes = Array(answer.utf8)
                _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                heard.set()
                released.wait()
                close(connection)
            }
        }

        deinit {
            released.signal()
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }
    }

    /// Cancels `call` once `server` holds its request, and checks that it ends cancelled,
    /// within 2 s: the bound is a guard for a loaded CI machine (the parallel suite made
    /// it 0.14 s once), not the figure, which it returns for the caller to print.
    static func cancelWhileHeld(
        _ call: Task<HTTPResponseData, any Error>, by server: HoldingServer,
        _ what: String
    ) async throws -> Duration {
        try await eventually(what) { server.answered }
        let cancelled = ContinuousClock.now
        call.cancel()
        let result = await call.result
        let took = ContinuousClock.now - cancelled
        #expect(took < .seconds(2), "the cancel took \(took)")
        if case .failure(let error) = result, error as? RoboscopeError == .cancelled { return took }
        Issue.record("expected cancelled, got \(result)")
        return took
    }

    /// A cancel shuts the socket down, which reads as the end of a body that ends with the
    /// connection: the call must still end cancelled, not with the half body as an answer.
    @Test func aCancelMidBodyIsACancelNotAShortAnswer() async throws {
        let server = try HoldingServer(answer: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npart of")
        let call = Task {
            try await SocketHTTPTransport().send(
                HTTPRequestData(method: "GET", url: URL(string: "http://127.0.0.1:\(server.port)/")!))
        }
        _ = try await Self.cancelWhileHeld(call, by: server, "the half answer sent")
    }

    @Test func aCancelEndsAWaitForASilentServerAtOnce() async throws {
        let silent = try HoldingServer()
        let transport = SocketHTTPTransport()
        let call = Task {
            try await transport.send(
                HTTPRequestData(
                    method: "POST", url: URL(string: "http://127.0.0.1:\(silent.port)/x")!, body: Data("{}".utf8)))
        }
        // Without the cancel it would wait 60 s; unloaded, the cancel takes well under a millisecond.
        let took = try await Self.cancelWhileHeld(call, by: silent, "the request at the silent server")
        print("CancelRaceTests: a cancel ended a silent wait in \(took)")
    }

    @Test func aSilentServerTimesOutAndARefusedOneFailsAtOnceWithTheirURLErrorCodes() async throws {
        let silent = try HoldingServer()
        let quick = SocketHTTPTransport(timeout: 0.3)
        await #expect(
            throws: RoboscopeError.transport(
                TransportFailure(
                    "no answer within 0.3 s", urlErrorCode: URLError.Code.timedOut.rawValue, timedOut: true))
        ) {
            try await quick.send(HTTPRequestData(method: "GET", url: URL(string: "http://127.0.0.1:\(silent.port)/")!))
        }
        let closed = try FreePort.pick()
        // https alike: the refusal comes before any TLS.
        for scheme in ["http", "https"] {
            do {
                _ = try await SocketHTTPTransport().send(
                    HTTPRequestData(method: "GET", url: URL(string: "\(scheme)://127.0.0.1:\(closed)/")!))
                Issue.record("expected a refused connection (\(scheme))")
            } catch RoboscopeError.transport(let failure) {
                #expect(failure.urlError?.code == .cannotConnectToHost, "\(scheme): \(failure)")
            }
        }
    }
    #endif
}
