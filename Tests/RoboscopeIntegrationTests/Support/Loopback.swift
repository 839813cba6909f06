import CLinuxSystem
import Foundation
#if canImport(Glibc)
import Glibc

/// 127.0.0.1 as the tests' sockets use it: its address for bind and connect, and
/// listeners for the tests' relays and stand-in servers.
enum Loopback {
    /// bind(2) of `fd` to 127.0.0.1:`port` (or another loopback `host`); 0 when it succeeded.
    static func bind(_ fd: Int32, port: Int, host: String = "127.0.0.1") -> Int32 {
        roboscope_bind_ipv4(fd, host, UInt16(port))
    }

    /// connect(2) of `fd` to 127.0.0.1:`port`; 0 when it succeeded.
    static func connect(_ fd: Int32, port: Int) -> Int32 {
        roboscope_connect_ipv4(fd, "127.0.0.1", UInt16(port))
    }

    /// A socket from the loopback address `source` (127.0.0.0/8: each is a client address
    /// of its own to the server) connected to 127.0.0.1:`port`.
    static func connect(port: Int, from source: String) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard bind(fd, port: 0, host: source) == 0, connect(fd, port: port) == 0
        else {
            close(fd)
            throw TestFailure("cannot connect from \(source) to 127.0.0.1:\(port)")
        }
        return fd
    }

    /// A socket connected to 127.0.0.1:`port`. With `receiveBuffer`, a receive buffer of
    /// that many bytes, set before the connect so that the window it offers stays that
    /// small: a client that does not read holds the server's answer in the server, not in
    /// its own kernel.
    static func connect(port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        guard connect(fd, port: port) == 0 else {
            close(fd)
            throw TestFailure("cannot connect to 127.0.0.1:\(port)")
        }
        return fd
    }

    /// A listening descriptor on `port`; `what` names the listener in the failure.
    static func listener(port: Int, what: String) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, port: port) == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw TestFailure("\(what) cannot listen on \(port)")
        }
        return fd
    }
}
#endif
