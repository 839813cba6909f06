#if canImport(Glibc)
import Foundation
import Testing
@testable import RoboscopeKit

/// The kit's Linux socket transports over TLS: the real server behind TLS terminators
/// (socat with OpenSSL, as an ingress would stand), certificates of the test's own
/// authority, and the refusals a client owes a certificate it cannot trust.
@Suite struct KitTLSTests {
    /// A TLS terminator presenting a certificate for localhost, signed by an authority of
    /// its own, with nothing listening behind it: it shakes hands and then closes.
    static func terminatorWithNothingBehind() throws -> (certificates: TestCertificates, terminator: TCPProxy) {
        let certificates = try TestCertificates()
        let terminator = try TCPProxy(
            to: ("127.0.0.1", try FreePort.pick()),
            terminatingTLS: try certificates.server("localhost", names: ["DNS:localhost"]))
        try terminator.start()
        return (certificates, terminator)
    }

    @Test func theKitWritesReadsAndFollowsOverHTTPSAndWSS() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let localhost = try certificates.server("localhost", names: ["DNS:localhost"])
        let ports = (http: try FreePort.pick(), ws: try FreePort.pick())
        let https = try TCPProxy(to: ("127.0.0.1", ports.http), terminatingTLS: localhost)
        let wss = try TCPProxy(to: ("127.0.0.1", ports.ws), terminatingTLS: localhost)
        // The service names the terminator's URL, as a deployment behind an ingress does;
        // the kit asks for it over https.
        let server = try await ServerProcess(
            databaseURL: try await TestDatabase.fresh("kit_tls"),
            extraArguments: ["--realtime-url", "wss://localhost:\(wss.port)/api/v1/ws"], ports: ports)
        defer { server.stopWithoutWaiting() }
        try https.start()
        defer { https.stop() }
        try wss.start()
        defer { wss.stop() }

        let client = RoboscopeClient(
            RoboscopeConfiguration(
                baseURL: URL(string: "https://localhost:\(https.port)")!, userID: "kit",
                http: SocketHTTPTransport(trustedCertificatesFile: certificates.authority),
                webSocket: SocketWebSocketTransport(trustedCertificatesFile: certificates.authority)))
        #expect(try await client.webSocketURL().absoluteString == "wss://localhost:\(wss.port)/api/v1/ws")
        let session = try await ClientKitEndToEndTests.session(client)
        let live = client.follow(.workSession(session.id), from: TopicCursor(position: 0, topicSeq: 0))
        let events = Task {
            var types: [String] = []
            for try await event in live.events {
                types.append(event.type)
                if types.filter({ $0 == "marker.created" }).count == 501 { break }
            }
            return types
        }
        // Answers of many TLS records (a bulk of 500 comes back whole), and a catch-up of
        // as many events on the socket.
        let created = try await client.createMarkers(
            (0..<500).map { ClientKitEndToEndTests.marker(session.id, "tls \($0)") })
        #expect(created.count == 500)
        _ = try await client.createMarker(ClientKitEndToEndTests.marker(session.id, "one more"))
        let types = try await FirstOutcome<[String]>.bounded(
            by: .seconds(60), on: SystemClock(),
            timeout: { TestFailure("the events did not come over wss within 60 s") },
            cancelled: { CancellationError() }
        ) { try await events.value }
        #expect(types.first == "work_session.created")
        #expect(types.filter { $0 == "marker.created" }.count == 501)
        let listed = try await client.markers(workSessionID: session.id, limit: 200)
        #expect(listed.items.count == 200)

        // `roboscope-client` trusts a private authority through OpenSSL's SSL_CERT_FILE:
        // `watch` over https and wss prints the session's events from the start.
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("watch-tls-\(UUID())").path
        let watch = try ClientProcess(
            [
                "watch", "--url", "https://localhost:\(https.port)", "--user", "kit",
                "--topic", "work_session:\(session.id.uuidString.lowercased())", "--since", "0", "--state", state,
            ],
            environment: ["SSL_CERT_FILE": certificates.authority])
        try await eventually("watch printed every event over TLS", within: 60) { watch.lines.count >= types.count }
        #expect(await watch.stop() == 0, "\(watch.errorLines.suffix(5))")
        let printed = try watch.lines.map { try WireCoding.decoder().decode(TopicEvent.self, from: Data($0.utf8)) }
        #expect(printed.map(\.topicSeq) == Array(1...Int64(printed.count)), "each event once, in order")
        try? FileManager.default.removeItem(atPath: state)
    }

    @Test func anUntrustedOrMisnamedCertificateIsRefusedWithItsURLErrorCode() async throws {
        // The handshake fails before the terminator would forward anything.
        let (certificates, terminator) = try Self.terminatorWithNothingBehind()
        defer {
            terminator.stop()
            certificates.remove()
        }

        func refusal(_ send: () async throws -> Void) async -> TransportFailure? {
            do {
                try await send()
            } catch RoboscopeError.transport(let failure) {
                return failure
            } catch {
                Issue.record("expected a transport failure, got \(error)")
            }
            return nil
        }
        // The system does not trust the test's authority.
        let untrusted = await refusal {
            _ = try await SocketHTTPTransport().send(
                HTTPRequestData(method: "GET", url: URL(string: "https://localhost:\(terminator.port)/")!))
        }
        #expect(untrusted?.urlError?.code == .serverCertificateUntrusted, "\(String(describing: untrusted))")
        #expect(
            untrusted?.message.contains("unable to get local issuer certificate") == true,
            "\(String(describing: untrusted))")
        // Trusted, but issued for another name than the one asked for.
        let trusting = SocketHTTPTransport(trustedCertificatesFile: certificates.authority)
        let misnamed = await refusal {
            _ = try await trusting.send(
                HTTPRequestData(method: "GET", url: URL(string: "https://127.0.0.1:\(terminator.port)/")!))
        }
        #expect(misnamed?.urlError?.code == .serverCertificateUntrusted, "\(String(describing: misnamed))")
        // And the WebSocket transport alike.
        let socket = await refusal {
            _ = try await SocketWebSocketTransport().connect(
                to: URL(string: "wss://localhost:\(terminator.port)/api/v1/ws")!, headers: [:])
        }
        #expect(socket?.urlError?.code == .serverCertificateUntrusted, "\(String(describing: socket))")
        // An authority file that is not there is said at the first connection.
        let missing = await refusal {
            _ = try await SocketHTTPTransport(trustedCertificatesFile: "/nonexistent/ca.pem")
                .send(HTTPRequestData(method: "GET", url: URL(string: "https://localhost:\(terminator.port)/")!))
        }
        #expect(missing?.urlError?.code == .secureConnectionFailed, "\(String(describing: missing))")
    }

    /// A TLS connection whose peer has gone: its writes fail with an error. OpenSSL writes
    /// with `write()`, which raises SIGPIPE on a closed connection, and that ends a process
    /// that has not set the signal aside, as this test process has not (`watch` over TLS
    /// in the failover test exited -13 when stopped): the session blocks the signal on its
    /// thread while it calls into OpenSSL, as libpq does. The terminator shakes hands and
    /// then closes, since nothing listens behind it; the writes go on until one fails.
    @Test func writesToAConnectionWhosePeerHasGoneFailWithoutABrokenPipeSignal() async throws {
        let (certificates, terminator) = try Self.terminatorWithNothingBehind()
        defer {
            terminator.stop()
            certificates.remove()
        }
        let context = TLSContext(trustedCertificatesFile: certificates.authority)
        let port = terminator.port
        let outcome: Result<Int, any Error> = await onOwnThread {
            Result {
                let fd = try TCPSocket.connect(host: "localhost", port: port, timeout: 5)
                defer { close(fd) }
                let stream = try SocketStream(fd: fd, host: "localhost", tls: context, timeout: 5, readTimeout: 5)
                // Gone once a read says so: its close, or a failure (within the 5 s limit).
                var buffer = [UInt8](repeating: 0, count: 1024)
                while (try? stream.read(into: &buffer)) ?? 0 > 0 {}
                // The first failure is the peer's reset (ECONNRESET, no signal); what comes
                // after it, such as the close frame a WebSocket then sends, meets EPIPE.
                var failures = 0
                for written in 0..<10_000 {
                    do {
                        try stream.write(Array(repeating: 120, count: 1024))
                    } catch {
                        failures += 1
                        if failures == 3 { return written }
                    }
                }
                throw TestFailure("10,000 writes to a closed connection, \(failures) failed")
            }
        }
        switch outcome {
        case .success(let written): print("KitTLSTests: 3 writes of \(written + 1) failed, and the process lives")
        case .failure(let error): Issue.record("\(error)")
        }
    }

    /// A server that accepts and never answers the client's hello: the handshake times out,
    /// and a cancel ends it at once.
    @Test func aSilentServerNeverHoldsAHandshake() async throws {
        let silent = try CancelRaceTests.HoldingServer()
        let quick = SocketHTTPTransport(timeout: 0.3)
        do {
            _ = try await quick.send(
                HTTPRequestData(method: "GET", url: URL(string: "https://127.0.0.1:\(silent.port)/")!))
            Issue.record("expected a time-out")
        } catch RoboscopeError.transport(let failure) {
            #expect(failure.urlError?.code == .timedOut, "\(failure)")
        }

        let held = try CancelRaceTests.HoldingServer()
        let call = Task {
            try await SocketHTTPTransport().send(
                HTTPRequestData(method: "GET", url: URL(string: "https://127.0.0.1:\(held.port)/")!))
        }
        let took = try await CancelRaceTests.cancelWhileHeld(call, by: held, "the client's hello at the silent server")
        print("KitTLSTests: a cancel ended a silent handshake in \(took)")
    }
}
#endif
