#if canImport(Glibc)
import COpenSSL
import Foundation
import Glibc

/// What a socket transport's TLS connections trust (Linux): the system's certificate
/// authorities, or those of one PEM file. Built at the first `https://` or `wss://`
/// connection, so that a transport that never speaks TLS never reads a certificate.
final class TLSContext: @unchecked Sendable {
    /// A PEM file of the authorities to trust; nil trusts the system's (OpenSSL's default
    /// paths, which honour `SSL_CERT_FILE` and `SSL_CERT_DIR`).
    let trustedCertificatesFile: String?
    private let lock = NSLock()
    private var built: OpaquePointer?

    init(trustedCertificatesFile: String?) {
        self.trustedCertificatesFile = trustedCertificatesFile
    }

    deinit {
        if let built { SSL_CTX_free(built) }
    }

    /// OpenSSL's context, shared by every connection of the transport (OpenSSL allows
    /// that once it is configured).
    func context() throws -> OpaquePointer {
        try lock.withLock {
            if let built { return built }
            guard let context = SSL_CTX_new(TLS_client_method()) else {
                throw TCPSocket.failure("cannot set up TLS", .secureConnectionFailed)
            }
            roboscope_tls_configure(context)
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            let loaded =
                trustedCertificatesFile.map { SSL_CTX_load_verify_locations(context, $0, nil) }
                ?? SSL_CTX_set_default_verify_paths(context)
            guard loaded == 1 else {
                SSL_CTX_free(context)
                throw TCPSocket.failure(
                    "cannot load the trusted certificates \(trustedCertificatesFile ?? "of the system")",
                    .secureConnectionFailed)
            }
            built = context
            return context
        }
    }
}

/// One TLS connection over a connected, blocking socket: the handshake with the server's
/// certificate and name verified, then whole writes and reads.
///
/// A WebSocket reads on one thread and writes on others, and an OpenSSL session must not
/// be used by two threads at once: every call into it holds `lock`, and a read waits for
/// bytes (`poll`) before it takes the lock, so a reader that waits for the server never
/// holds off a write. A read that finds only part of a record gives the lock back when
/// the socket's read time limit ends it, and waits again.
final class TLSSession: @unchecked Sendable {
    private let session: OpaquePointer
    private let fd: Int32
    private let lock = NSLock()

    /// Shakes hands over `fd` as a client of `host`, within `timeout` seconds.
    init(fd: Int32, host: String, context: TLSContext, timeout: Double) throws {
        guard let session = SSL_new(try context.context()) else {
            throw TCPSocket.failure("cannot set up TLS", .secureConnectionFailed)
        }
        self.session = session
        self.fd = fd
        SSL_set_fd(session, fd)
        // An address is checked against the certificate's IP addresses and sent without a
        // server name (RFC 6066 names hosts only); a name is sent and checked as a name.
        if Self.isAddress(host) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(session), host)
        } else {
            roboscope_tls_set_server_name(session, host)
            SSL_set1_host(session, host)
        }
        try handshake(host: host, timeout: timeout)
    }

    deinit {
        SSL_free(session)
    }

    /// Writes every byte, or throws; `readTimeout` bounds a wait for the server's bytes
    /// (0: for ever), which a write can need.
    func write(_ bytes: [UInt8], readTimeout: Double) throws {
        guard !bytes.isEmpty else { return }
        while true {
            let (count, error, code) = call { session in
                bytes.withUnsafeBytes { SSL_write(session, $0.baseAddress, Int32($0.count)) }
            }
            if count > 0 { return }
            switch error {
            case SSL_ERROR_WANT_READ:
                try wait(for: Int16(POLLIN), seconds: readTimeout)
            case SSL_ERROR_WANT_WRITE:
                // A blocking write that came back: it stayed blocked past the send time limit.
                throw TCPSocket.failure("a write stayed blocked past its time limit", .timedOut)
            default:
                throw Self.lost(error, code, doing: "write")
            }
        }
    }

    /// Reads into `buffer`, waiting up to `readTimeout` seconds for the server (0: for
    /// ever): how many bytes came, 0 when the server closed the connection in TLS's own
    /// way (close_notify), or throws.
    func read(into buffer: inout [UInt8], readTimeout: Double) throws -> Int {
        while true {
            if lock.withLock({ SSL_pending(session) }) == 0 {
                try wait(for: Int16(POLLIN), seconds: readTimeout)
            }
            let (count, error, code) = call { session in
                buffer.withUnsafeMutableBytes { SSL_read(session, $0.baseAddress, Int32($0.count)) }
            }
            if count > 0 { return Int(count) }
            switch error {
            case SSL_ERROR_ZERO_RETURN:
                return 0
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                // A record that was not data, or part of one when the time limit came.
                continue
            case SSL_ERROR_SYSCALL where code == EINTR:
                continue
            default:
                // Among them a connection closed without close_notify, which can cut an
                // answer short: a failure, never an end.
                throw Self.lost(error, code, doing: "read")
            }
        }
    }

    private func handshake(host: String, timeout: Double) throws {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        while true {
            let (result, error, code) = call { SSL_connect($0) }
            if result == 1 { return }
            let verified = SSL_get_verify_result(session)
            if verified != X509_V_OK {
                let reason = String(cString: X509_verify_cert_error_string(verified))
                throw TCPSocket.failure(
                    "the certificate of \(host) is not trusted: \(reason)", .serverCertificateUntrusted)
            }
            let remaining = ContinuousClock.now.duration(to: deadline).components
            let left = Double(remaining.seconds) + Double(remaining.attoseconds) / 1e18
            switch error {
            case SSL_ERROR_WANT_READ where left > 0:
                try wait(for: Int16(POLLIN), seconds: left)
            case SSL_ERROR_WANT_WRITE where left > 0:
                try wait(for: Int16(POLLOUT), seconds: left)
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                throw TCPSocket.failure("no TLS handshake with \(host) within \(timeout) s", .timedOut)
            default:
                let lost = Self.lost(error, code, doing: "handshake")
                if case .transport(let failure) = lost, failure.timedOut { throw lost }
                throw TCPSocket.failure("no TLS connection to \(host): \(Self.describe(lost))", .secureConnectionFailed)
            }
        }
    }

    /// One call into the session (`SSL_connect`, `SSL_read`, `SSL_write`), under the lock:
    /// its result, OpenSSL's reason when it did not succeed, and the system's errno.
    private func call(_ operation: (OpaquePointer) -> Int32) -> (result: Int32, error: Int32, errno: Int32) {
        lock.withLock {
            ERR_clear_error()
            let result = Self.withoutBrokenPipeSignal { operation(session) }
            return (result, result > 0 ? SSL_ERROR_NONE : SSL_get_error(session, result), errno)
        }
    }

    /// Runs a call into OpenSSL with SIGPIPE blocked on this thread, and takes back a
    /// SIGPIPE that the call raised. OpenSSL writes to the socket with `write()`, not with
    /// `send(MSG_NOSIGNAL)`, and a write to a connection the peer has closed raises
    /// SIGPIPE, which ends the process unless the app has set the signal aside: a library
    /// must not change that for the whole process, so it does what libpq does around
    /// OpenSSL. The write itself then fails with EPIPE, an error like any other.
    private static func withoutBrokenPipeSignal<T>(_ call: () -> T) -> T {
        var brokenPipe = sigset_t()
        sigemptyset(&brokenPipe)
        sigaddset(&brokenPipe, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &brokenPipe, &previous)
        // One already pending came from elsewhere: it is not this call's to take.
        var pending = sigset_t()
        sigpending(&pending)
        let pendingBefore = sigismember(&pending, SIGPIPE) == 1
        let result = call()
        // The call's errno is what the caller reads next, whatever the calls below do to it.
        let callError = errno
        if !pendingBefore {
            sigpending(&pending)
            if sigismember(&pending, SIGPIPE) == 1 {
                var now = timespec(tv_sec: 0, tv_nsec: 0)
                _ = sigtimedwait(&brokenPipe, nil, &now)
            }
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        errno = callError
        return result
    }

    /// Waits until the socket is ready for `events`, up to `seconds` (0: for ever).
    private func wait(for events: Int16, seconds: Double) throws {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let ready = poll(&entry, 1, seconds > 0 ? Int32(max(1, seconds * 1000)) : -1)
            if ready > 0 { return }
            if ready == 0 { throw TCPSocket.failure("no answer within \(seconds) s", .timedOut) }
            if errno != EINTR {
                throw TCPSocket.failure(
                    "the connection failed (\(String(cString: strerror(errno))))", .networkConnectionLost)
            }
        }
    }

    /// The failure of a call that ended with OpenSSL's `error` and the system's `code`.
    private static func lost(_ error: Int32, _ code: Int32, doing what: String) -> RoboscopeError {
        if error == SSL_ERROR_SYSCALL, code == EAGAIN || code == EWOULDBLOCK {
            return TCPSocket.failure("a TLS \(what) stayed blocked past its time limit", .timedOut)
        }
        var reason = "the connection closed"
        let queued = ERR_get_error()
        if queued != 0 {
            var text = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(queued, &text, text.count)
            reason = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        } else if error == SSL_ERROR_SYSCALL, code != 0 {
            reason = String(cString: strerror(code))
        }
        return TCPSocket.failure("the TLS \(what) failed (\(reason))", .networkConnectionLost)
    }

    private static func describe(_ error: RoboscopeError) -> String {
        if case .transport(let failure) = error { return failure.message }
        return "\(error)"
    }

    private static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
#endif
