import BlockingPool
import Foundation
import Synchronization
import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// Something registered with a loop for readiness of one descriptor.
protocol LoopHandler: AnyObject {
    func handle(events: UInt32)
}

/// One thread, one epoll instance: it runs I/O handlers for its descriptors, tasks
/// that other threads hand it (`execute`), and a tick every `tickInterval`.
/// Everything registered with a loop is touched only on the loop's thread.
///
/// `@unchecked Sendable`: `tasks` and `stopRequested` are guarded by `lock`; the
/// handlers, `onTick` (set before `start`) and the epoll set belong to the loop's thread.
final class EventLoop: @unchecked Sendable {
    let name: String
    private let epoll: Epoll
    private let waker: Waker
    private let lock = NSLock()
    private var tasks: [@Sendable () -> Void] = []
    private var handlers: [Int32: any LoopHandler] = [:]
    private var stopRequested = false
    private var thread: JoinableThread?
    private let tickInterval: Duration
    /// Runs on the loop's thread about every `tickInterval`.
    var onTick: ((ContinuousClock.Instant) -> Void)?
    /// Runs on the loop's thread after each round of queued tasks (set before `start`):
    /// what the tasks left to write goes out once, however many of them there were.
    var afterTasks: (() -> Void)?

    init(name: String, tickInterval: Duration = .milliseconds(250)) throws {
        self.name = name
        self.tickInterval = tickInterval
        epoll = try Epoll()
        waker = try Waker()
        try epoll.add(waker.fd, events: Epoll.readable)
    }

    func start() {
        thread = JoinableThread(name: name, stackSize: 1 << 20) { [self] in run() }
    }

    /// The loop's thread, once it runs (`assertInLoop`).
    private let owner = Atomic<UInt>(0)

    /// Runs `task` on the loop's thread, after the tasks queued before it. `@Sendable`:
    /// the hop to another thread is one the compiler checks.
    func execute(_ task: @escaping @Sendable () -> Void) {
        lock.lock()
        let wasEmpty = tasks.isEmpty
        tasks.append(task)
        lock.unlock()
        if wasEmpty { waker.wake() }
    }

    func stop() {
        lock.lock()
        stopRequested = true
        lock.unlock()
        waker.wake()
    }

    /// Waits for the thread to end after `stop()`.
    func join() async { await thread?.join() }

    /// Whether the caller runs on this loop's thread.
    var inLoop: Bool { owner.load(ordering: .relaxed) == UInt(pthread_self()) }

    /// Stops a debug build when loop-only code runs on another thread (as swift-nio's
    /// `assertInEventLoop`); costs nothing in a release build.
    func assertInLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inLoop, "\(name): called off its loop's thread", file: file, line: line)
    }

    // MARK: Loop-thread only

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

    private func run() {
        owner.store(UInt(pthread_self()), ordering: .relaxed)
        let clock = ContinuousClock()
        var nextTick = clock.now + tickInterval
        let timeout = tickInterval.milliseconds
        while true {
            do {
                try epoll.wait(timeout: timeout) { fd, events in
                    if fd == waker.fd {
                        waker.drain()
                    } else {
                        handlers[fd]?.handle(events: events)
                    }
                }
            } catch {
                // epoll_wait fails only on programming errors; keep the loop alive.
            }
            lock.lock()
            let pending = tasks
            tasks.removeAll(keepingCapacity: true)
            let stop = stopRequested
            lock.unlock()
            for task in pending { task() }
            if !pending.isEmpty { afterTasks?() }
            if stop { return }
            let now = clock.now
            if now >= nextTick {
                nextTick = now + tickInterval
                onTick?(now)
            }
        }
    }
}
