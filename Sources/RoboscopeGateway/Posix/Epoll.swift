import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// An epoll instance: the loop's whole view of readiness (level-triggered). `Sendable`:
/// a descriptor, and the kernel's `epoll_ctl` and `epoll_wait` are safe from any thread;
/// the buffer `wait` fills is its caller's.
final class Epoll: Sendable {
    let fd: Int32

    init() throws {
        fd = try syscallChecked("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
    }

    deinit {
        close(fd)
    }

    static let readable = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
    static let writable = EPOLLOUT.rawValue

    func add(_ descriptor: Int32, events mask: UInt32, exclusive: Bool = false) throws {
        var event = epoll_event()
        event.events = mask | (exclusive ? EPOLLEXCLUSIVE.rawValue : 0)
        event.data.fd = descriptor
        try syscallChecked("epoll_ctl(ADD)") { epoll_ctl(fd, EPOLL_CTL_ADD, descriptor, &event) }
    }

    func modify(_ descriptor: Int32, events mask: UInt32) throws {
        var event = epoll_event()
        event.events = mask
        event.data.fd = descriptor
        try syscallChecked("epoll_ctl(MOD)") { epoll_ctl(fd, EPOLL_CTL_MOD, descriptor, &event) }
    }

    func remove(_ descriptor: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(fd, EPOLL_CTL_DEL, descriptor, &event)
    }

    /// Waits up to `timeout` milliseconds; calls `body(fd, events)` for each ready
    /// descriptor, at most `events.count` of them a call.
    func wait(
        into events: UnsafeMutableBufferPointer<epoll_event>, timeout: Int32, _ body: (Int32, UInt32) -> Void
    ) throws {
        let count: Int32
        switch try syscall("epoll_wait", { epoll_wait(fd, events.baseAddress, Int32(events.count), timeout) }) {
        case .done(let ready): count = ready
        case .wouldBlock: count = 0
        }
        for index in 0..<Int(count) {
            body(events[index].data.fd, events[index].events)
        }
    }
}
