import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// Thin calls on socket descriptors; everything goes through `syscall`.
enum Socket {
    /// A non-blocking IPv4 listening socket; with `reusePort`, one of several sockets (of
    /// this or other processes) on the same port that the kernel spreads connections over.
    static func listen(host: String, port: Int, backlog: Int32 = 4096, reusePort: Bool = false) throws -> Int32 {
        let fd = try syscallChecked("socket") {
            socket(
                AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            var on: Int32 = 1
            try syscallChecked("setsockopt(SO_REUSEADDR)") {
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            }
            if reusePort {
                try syscallChecked("setsockopt(SO_REUSEPORT)") {
                    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, socklen_t(MemoryLayout<Int32>.size))
                }
            }
            let address = host == "localhost" ? "127.0.0.1" : host
            var parsed = in_addr()
            guard inet_pton(AF_INET, address, &parsed) == 1 else {
                throw SystemError(call: "inet_pton(\(host)): not an IPv4 address", errno: EINVAL)
            }
            try syscallChecked("bind(\(host):\(port))") { roboscope_bind_ipv4(fd, address, UInt16(port)) }
            try syscallChecked("listen") { Glibc.listen(fd, backlog) }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// The port a socket is bound to (for `--ws-port 0`).
    static func localPort(_ fd: Int32) -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Bytes of kernel send buffer per client socket (the kernel doubles it for bookkeeping).
    static let sendBufferSize = 256 * 1024

    /// Accepts one pending connection (non-blocking, TCP_NODELAY) and its peer's address.
    static func accept(_ listener: Int32) throws -> IOResult<(fd: Int32, peer: String)> {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                try syscall("accept4") {
                    accept4(listener, raw, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                }
            }
        }
        guard case .done(let fd) = result else { return .wouldBlock }
        var on: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        // A fixed send buffer: autotuning would let the kernel hold up to 4 MiB for a client
        // that stopped reading, before our own bound (`maxBufferedBytes`) ever sees it.
        var sendBuffer = Int32(sendBufferSize)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        _ = inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(INET_ADDRSTRLEN))
        return .done((fd, text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }))
    }

    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws -> IOResult<Int> {
        try syscall("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    static func writev(_ fd: Int32, _ vectors: UnsafeMutableBufferPointer<iovec>, count: Int) throws -> IOResult<Int> {
        try syscall("writev") { Glibc.writev(fd, vectors.baseAddress, Int32(count)) }
    }

    static func write(_ fd: Int32, _ bytes: [UInt8]) throws -> IOResult<Int> {
        try bytes.withUnsafeBytes { raw in try syscall("write") { Glibc.write(fd, raw.baseAddress, raw.count) } }
    }

    /// Half-closes the sending side: the peer reads our last bytes, then end of stream.
    static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }
}
