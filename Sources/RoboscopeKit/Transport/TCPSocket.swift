#if canImport(Glibc)
import Foundation
import Glibc

/// The blocking POSIX calls the kit's socket transports share (Linux): connect, time
/// limits, whole writes. Failures carry the `URLError` code URLSession would have
/// given, so an app tells them apart the same way on every transport.
enum TCPSocket {
    /// A socket connected to `host:port`, each address tried for up to `timeout` seconds.
    /// `adopt`, when given, takes every socket before its connect, so that a cancel can
    /// shut it down, and owns it from then on: it closes a socket whose connect failed
    /// when the next one comes, and the last one. It answers false to give up (the caller
    /// cancelled). Without it, a socket whose connect failed is closed here.
    static func connect(host: String, port: Int, timeout: Double, adopt: ((Int32) -> Bool)? = nil) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
            throw failure("cannot resolve \(host)", .cannotFindHost)
        }
        defer { freeaddrinfo(found) }
        var lastError: Int32 = 0
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            let fd = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            if fd >= 0 {
                if let adopt, !adopt(fd) { throw RoboscopeError.cancelled }
                // On Linux a blocking connect honours the send timeout.
                setTimeouts(fd, seconds: timeout)
                if Glibc.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 {
                    var one: Int32 = 1
                    setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    return fd
                }
                lastError = errno
                if adopt == nil { close(fd) }
            }
            candidate = address.pointee.ai_next
        }
        if lastError == EINPROGRESS || lastError == EAGAIN || lastError == ETIMEDOUT {
            throw failure("no connection to \(host):\(port) within \(timeout) s", .timedOut)
        }
        throw failure(
            "cannot connect to \(host):\(port) (\(String(cString: strerror(lastError))))", .cannotConnectToHost)
    }

    /// How long a read (`seconds`; 0 waits for ever) and a write may block.
    static func setTimeouts(_ fd: Int32, seconds: Double, sendSeconds: Double? = nil) {
        func set(_ option: Int32, _ value: Double) {
            var time = timeval(tv_sec: Int(value), tv_usec: Int((value - value.rounded(.down)) * 1_000_000))
            setsockopt(fd, SOL_SOCKET, option, &time, socklen_t(MemoryLayout<timeval>.size))
        }
        set(SO_RCVTIMEO, seconds)
        set(SO_SNDTIMEO, sendSeconds ?? seconds)
    }

    /// Writes every byte, or throws: the peer is gone, or the write stayed blocked past
    /// the send timeout.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK {
                    throw failure("a write stayed blocked past its time limit", .timedOut)
                }
                throw failure("the connection is gone (\(String(cString: strerror(code))))", .networkConnectionLost)
            }
            offset += count
        }
    }

    static func failure(_ message: String, _ code: URLError.Code) -> RoboscopeError {
        .transport(TransportFailure(message, urlErrorCode: code.rawValue, timedOut: code == .timedOut))
    }
}
#endif
