import Foundation
#if canImport(Glibc)
import Glibc

/// 127.0.0.1 as the tests' sockets use it: its address for bind and connect, and
/// listeners for the tests' relays and stand-in servers.
enum Loopback {
    /// Runs `body` with 127.0.0.1:`port` (or another loopback `host`) as the socket calls take it.
    static func withAddress<T>(
        port: Int, host: String = "127.0.0.1", _ body: (UnsafePointer<sockaddr>, socklen_t) -> T
    ) -> T {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// A socket from the loopback address `source` (127.0.0.0/8: each is a client address
    /// of its own to the server) connected to 127.0.0.1:`port`.
    static func connect(port: Int, from source: String) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard withAddress(port: 0, host: source, { bind(fd, $0, $1) }) == 0,
            withAddress(port: port, { Glibc.connect(fd, $0, $1) }) == 0
        else {
            close(fd)
            throw TestFailure("cannot connect from \(source) to 127.0.0.1:\(port)")
        }
        return fd
    }

    /// A socket to 127.0.0.1:`port` with a receive buffer of `receiveBuffer` bytes, set
    /// before the connect so that the window it offers stays that small: a client that
    /// does not read holds the server's answer in the server, not in its own kernel.
    static func connect(port: Int, receiveBuffer: Int32) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var size = receiveBuffer
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        guard withAddress(port: port, { Glibc.connect(fd, $0, $1) }) == 0 else {
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
        guard withAddress(port: port, { bind(fd, $0, $1) }) == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw TestFailure("\(what) cannot listen on \(port)")
        }
        return fd
    }
}
#endif
