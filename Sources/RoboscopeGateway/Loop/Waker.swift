import CLinuxSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An eventfd that other threads write to wake a thread waiting in `poll` or `epoll`.
final class Waker: Sendable {
    let fd: Int32

    init() throws {
        fd = try syscallChecked("eventfd") { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) }
    }

    deinit {
        close(fd)
    }

    func wake() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    /// Clears the wake-ups so far (after the waiting thread woke).
    func drain() {
        var value: UInt64 = 0
        _ = read(fd, &value, 8)
    }

    /// Waits up to `timeoutMilliseconds` for a wake-up or for `socket` to be readable;
    /// returns whether the socket is readable.
    @discardableResult
    func wait(timeoutMilliseconds: Int32, orReadable socket: Int32? = nil) -> Bool {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        if let socket { fds.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0)) }
        guard poll(&fds, nfds_t(fds.count), timeoutMilliseconds) > 0 else { return false }
        if fds[0].revents != 0 { drain() }
        return fds.count > 1 && fds[1].revents != 0
    }
}
