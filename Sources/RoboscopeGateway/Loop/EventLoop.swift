import CLinuxSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Something registered with a loop for readiness of one descriptor.
protocol LoopHandler: AnyObject {
    func handle(events: UInt32)
}

/// One thread's loop: readiness of its descriptors (epoll), the messages other threads
/// post to its inbox, and a tick every `tickInterval`.
///
/// Not `Sendable`: a loop is made and run on its own thread and touched only there,
/// with what it runs (a shard, its connections). Other threads reach it only by posting
/// a `Sendable` message to its `Inbox`, which `run` hands to its `receive`, in order.
final class EventLoop<Message: Sendable> {
    let name: String
    private let epoll: Epoll
    private let inbox: Inbox<Message>
    private var ready: UnsafeMutableBufferPointer<epoll_event>
    private var handlers: [Int32: any LoopHandler] = [:]
    private let tickInterval: Duration
    /// The thread that made the loop and runs it (`assertInLoop`).
    private let owner = pthread_self()

    /// The epoll set and inbox of a loop, made by the thread that starts it: failures
    /// are its to report, and the loop itself is made on its own thread.
    struct Parts: Sendable {
        let epoll: Epoll
        let inbox: Inbox<Message>

        init() throws {
            epoll = try Epoll()
            inbox = try Inbox()
            try epoll.add(inbox.waker.fd, events: Epoll.readable)
        }
    }

    /// A loop on `parts`: it wakes when a message reaches their inbox.
    init(name: String, parts: Parts, tickInterval: Duration = .milliseconds(250)) {
        self.name = name
        epoll = parts.epoll
        inbox = parts.inbox
        self.tickInterval = tickInterval
        ready = .allocate(capacity: 256)
    }

    deinit {
        ready.deallocate()
    }

    /// Whether the caller runs on this loop's thread.
    var inLoop: Bool { pthread_equal(owner, pthread_self()) != 0 }

    /// Stops a debug build when loop-only code runs on another thread (as swift-nio's
    /// `assertInEventLoop`); costs nothing in a release build.
    func assertInLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inLoop, "\(name): called off its loop's thread", file: file, line: line)
    }

    func register(_ fd: Int32, _ handler: any LoopHandler, events: UInt32, exclusive: Bool = false) throws {
        assertInLoop()
        try epoll.add(fd, events: events, exclusive: exclusive)
        handlers[fd] = handler
    }

    func modify(_ fd: Int32, events: UInt32) {
        assertInLoop()
        try? epoll.modify(fd, events: events)
    }

    func deregister(_ fd: Int32) {
        assertInLoop()
        epoll.remove(fd)
        handlers[fd] = nil
    }

    /// Runs on the calling thread until the inbox is closed: readiness to the registered
    /// handlers, each message to `receive`, then `afterMessages` once per round of them
    /// (what they left to write goes out once, however many there were), and `onTick`
    /// about every `tickInterval`. The handlers live for this call only, so nothing the
    /// loop keeps refers back to its owner.
    func run(
        receive: (Message) -> Void, afterMessages: () -> Void, onTick: (ContinuousClock.Instant) -> Void
    ) {
        assertInLoop()
        let clock = ContinuousClock()
        var nextTick = clock.now + tickInterval
        let timeout = tickInterval.milliseconds
        while true {
            do {
                try epoll.wait(into: ready, timeout: timeout) { fd, events in
                    if fd == inbox.waker.fd {
                        inbox.waker.drain()
                    } else {
                        handlers[fd]?.handle(events: events)
                    }
                }
            } catch {
                // epoll_wait fails only on programming errors; keep the loop alive.
            }
            let (messages, closed) = inbox.take()
            for message in messages { receive(message) }
            if !messages.isEmpty { afterMessages() }
            if closed { return }
            let now = clock.now
            if now >= nextTick {
                nextTick = now + tickInterval
                onTick(now)
            }
        }
    }
}
