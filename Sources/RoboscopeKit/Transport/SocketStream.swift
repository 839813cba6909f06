#if canImport(Glibc)
import Foundation
import Glibc

/// A connected socket as the socket transports read and write it: in the clear, or over
/// TLS. Its owner closes the descriptor; the stream only uses it.
final class SocketStream: Sendable {
    let fd: Int32
    private let tls: TLSSession?
    /// Seconds a read waits for the server (0: for ever). In the clear, set the socket's
    /// time limit with it.
    let readTimeout: Double

    /// A stream over `fd`, connected already: for `tls`, shakes hands with `host` first,
    /// within `timeout` seconds.
    init(fd: Int32, host: String, tls: TLSContext?, timeout: Double, readTimeout: Double) throws {
        self.fd = fd
        self.readTimeout = readTimeout
        self.tls = try tls.map { try TLSSession(fd: fd, host: host, context: $0, timeout: timeout) }
    }

    private init(fd: Int32, tls: TLSSession?, readTimeout: Double) {
        self.fd = fd
        self.tls = tls
        self.readTimeout = readTimeout
    }

    /// The same stream (its TLS session too), whose reads wait `seconds` for the server.
    func reading(timeout seconds: Double) -> SocketStream {
        SocketStream(fd: fd, tls: tls, readTimeout: seconds)
    }

    /// Writes every byte, or throws.
    func write(_ bytes: [UInt8]) throws {
        if let tls { try tls.write(bytes, readTimeout: readTimeout) } else { try TCPSocket.writeAll(fd, bytes) }
    }

    /// Reads into `buffer`: how many bytes came, 0 at the end of the stream, or throws
    /// (`timedOut` when nothing came within the time limit).
    func read(into buffer: inout [UInt8]) throws -> Int {
        if let tls { return try tls.read(into: &buffer, readTimeout: readTimeout) }
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count >= 0 { return count }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK {
                throw TCPSocket.failure("no answer within \(readTimeout) s", .timedOut)
            }
            throw TCPSocket.failure(
                "the connection failed (\(String(cString: strerror(code))))", .networkConnectionLost)
        }
    }
}
#endif
