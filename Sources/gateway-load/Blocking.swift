import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// Small blocking socket helpers for the load generator.
enum Blocking {
    static func connect(port: Int, from source: String? = nil) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        if let source {
            // The source address only: the port is chosen at connect, per destination, so
            // a bind does not hold one of the address's ephemeral ports for itself.
            var on: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_IP), IP_BIND_ADDRESS_NO_PORT, &on, socklen_t(MemoryLayout<Int32>.size))
            guard roboscope_bind_ipv4(fd, source, 0) == 0 else {
                close(fd)
                return nil
            }
        }
        guard roboscope_connect_ipv4(fd, "127.0.0.1", UInt16(port)) == 0 else {
            close(fd)
            return nil
        }
        var on: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && errno == EAGAIN {
                var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&poller, 1, 100)
                continue
            }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }

    /// Reads until `done` says the bytes so far are complete.
    static func readUntil(_ fd: Int32, _ done: ([UInt8]) -> Int?) -> ([UInt8], Int)? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            if let end = done(bytes) { return (bytes, end) }
            let count = read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            bytes += buffer[..<count]
        }
    }

    /// Where `needle` first occurs in `bytes`, through libc's memmem: the readers search
    /// every message they get.
    static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBytes { haystack in
            needle.withUnsafeBytes { pattern in
                guard let hit = memmem(haystack.baseAddress, haystack.count, pattern.baseAddress, pattern.count) else {
                    return nil
                }
                return haystack.baseAddress!.distance(to: UnsafeRawPointer(hit))
            }
        }
    }
}
