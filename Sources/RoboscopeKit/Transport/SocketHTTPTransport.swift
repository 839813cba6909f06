#if canImport(Glibc)
import Foundation
import Glibc

/// HTTP/1.1 over a TCP socket, one connection per request, in the clear or over TLS
/// (OpenSSL): the kit's HTTP transport on Linux (`defaultHTTPTransport()`).
///
/// Not FoundationNetworking's URLSession: a cancel that lands while its answer is being
/// delivered wedges it, with the session and a thread of Swift's cooperative pool, in
/// the toolchains this kit is built with (swift-corelibs-foundation#5412 for
/// `data(for:)`; with a completion handler the same race traps or wedges more rarely,
/// and CI caught it). Here a cancel only shuts the socket down, which wakes the one
/// thread blocked on it; nothing else is shared, so nothing can wedge. Each request runs
/// its connect, write and read on a thread of its own, so a slow network never holds a
/// thread of the cooperative pool.
///
/// Each request goes with `Connection: close`: a lost answer fails at once and the kit
/// retries with the same key, and a cancelled long poll is seen by the server at once.
/// It asks for gzip answers and inflates them. `https://` verifies the server's
/// certificate and name against the system's authorities, or those of
/// `trustedCertificatesFile` (docs/client-kit.md, "Transports").
public struct SocketHTTPTransport: HTTPTransport {
    /// Seconds a connect, a write or a silence between two reads may last before the
    /// request fails as timed out (the kit's own `requestTimeout` usually ends it first).
    public var timeout: Double
    /// The largest answer accepted, as received.
    public var maximumResponseSize: Int
    /// Whether to ask for gzip answers (`Accept-Encoding: gzip`).
    public var acceptsCompression: Bool
    /// A PEM file of the certificate authorities `https://` trusts; nil trusts the
    /// system's (which `SSL_CERT_FILE` and `SSL_CERT_DIR` can point elsewhere).
    public var trustedCertificatesFile: String? { tls.trustedCertificatesFile }
    private let tls: TLSContext

    public init(
        timeout: Double = 60, maximumResponseSize: Int = 64 << 20, acceptsCompression: Bool = true,
        trustedCertificatesFile: String? = nil
    ) {
        self.timeout = timeout
        self.maximumResponseSize = maximumResponseSize
        self.acceptsCompression = acceptsCompression
        tls = TLSContext(trustedCertificatesFile: trustedCertificatesFile)
    }

    public func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        let scheme = request.url.scheme?.lowercased()
        guard scheme == "http" || scheme == "https", let host = request.url.host else {
            throw RoboscopeError.transport(
                "SocketHTTPTransport speaks http:// and https:// only, not \(request.url.absoluteString)")
        }
        let head = try Self.head(of: request, host: host, acceptsCompression: acceptsCompression)
        let exchange = SocketExchange()
        let (timeout, maximumSize) = (timeout, maximumResponseSize)
        let tls = scheme == "https" ? tls : nil
        return try await withTaskCancellationHandler {
            try await onThread(named: "http-exchange") {
                try exchange.run(
                    host: host, port: request.url.port ?? (tls == nil ? 80 : 443), tls: tls, timeout: timeout,
                    bytes: head + (request.body.map(Array.init) ?? []),
                    reader: HTTPResponseReader(method: request.method, maximumSize: maximumSize))
            }
        } onCancel: {
            exchange.cancel()
        }
    }

    /// One header as it goes on the wire; a header that would end the line early (and
    /// could smuggle another header or request in) is refused, never sent or dropped.
    static func headerLine(_ name: String, _ value: String) throws -> String {
        // Bytes, not characters: "\r\n" is one Character, equal to neither "\r" nor "\n".
        guard !name.isEmpty, !(name + value).utf8.contains(where: { $0 == 13 || $0 == 10 }) else {
            throw RoboscopeError.badRequest(field: name, message: "a header name or value with a line break")
        }
        return "\(name): \(value)\r\n"
    }

    /// The request's head as it goes on the wire.
    static func head(of request: HTTPRequestData, host: String, acceptsCompression: Bool) throws -> [UInt8] {
        let url = request.url
        var target = url.path.isEmpty ? "/" : url.path
        if let query = url.query { target += "?" + query }
        let hostHeader = url.port.map { "\(host):\($0)" } ?? host
        var head = "\(request.method) \(target) HTTP/1.1\r\nHost: \(hostHeader)\r\nConnection: close\r\n"
        let framed: Set<String> = ["host", "connection", "content-length", "transfer-encoding"]
        for (name, value) in request.headers where !framed.contains(name.lowercased()) {
            head += try headerLine(name, value)
        }
        if acceptsCompression, !request.headers.keys.contains(where: { $0.lowercased() == "accept-encoding" }) {
            head += "Accept-Encoding: gzip\r\n"
        }
        if let body = request.body {
            head += "Content-Length: \(body.count)\r\n"
        } else if ["POST", "PUT", "PATCH"].contains(request.method.uppercased()) {
            head += "Content-Length: 0\r\n"
        }
        return Array((head + "\r\n").utf8)
    }
}

/// One request's connection, shared by the thread that runs it and the task's cancel.
/// The descriptor is closed under the lock, so a cancel never shuts down a descriptor
/// number that a later connection has reused.
final class SocketExchange: Sendable {
    private struct State {
        var fd: Int32 = -1
        var cancelled = false
    }

    private let state = Locked(State())

    /// Connects, writes and reads the answer, blocking; throws `RoboscopeError.cancelled`
    /// once `cancel()` was called.
    func run(
        host: String, port: Int, tls: TLSContext?, timeout: Double, bytes: [UInt8],
        reader: HTTPResponseReader
    ) throws -> HTTPResponseData {
        defer { release() }
        var reader = reader
        do {
            let fd = try TCPSocket.connect(host: host, port: port, timeout: timeout, adopt: adopt)
            let stream = try SocketStream(fd: fd, host: host, tls: tls, timeout: timeout, readTimeout: timeout)
            try stream.write(bytes)
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = try stream.read(into: &buffer)
                guard count > 0 else {
                    // A cancel's shutdown reads as the end of the connection, which would end
                    // a body without a length early: that is a cancel, not a short answer.
                    if isCancelled { throw RoboscopeError.cancelled }
                    return try reader.end()
                }
                if let answer = try reader.consume(buffer[..<count]) { return answer }
            }
        } catch {
            // A cancel shuts the socket down, and what that does to a connect, a write or
            // a read is not the caller's business: it cancelled.
            if isCancelled { throw RoboscopeError.cancelled }
            throw error
        }
    }

    /// Stops the request: wakes the thread blocked on its socket.
    func cancel() {
        state.withLock { state in
            state.cancelled = true
            if state.fd >= 0 { shutdown(state.fd, Int32(SHUT_RDWR)) }
        }
    }

    private var isCancelled: Bool { state.withLock { $0.cancelled } }

    private func adopt(_ socket: Int32) -> Bool {
        state.withLock { state in
            if state.fd >= 0 { close(state.fd) }
            state.fd = socket
            return !state.cancelled
        }
    }

    private func release() {
        state.withLock { state in
            if state.fd >= 0 { close(state.fd) }
            state.fd = -1
        }
    }
}
#endif
