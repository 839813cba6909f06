import CLibPQ
#if canImport(Glibc)
import Glibc
#endif

extension PGConnection {
    /// The connection's socket, to wait on with `poll` for notifications.
    public var socket: Int32 { PQsocket(handle) }

    /// Reads whatever the server sent and returns the channels notified since the last call.
    /// Never blocks: call it when `socket` is readable (or any time).
    public func drainNotifications() throws -> [String] {
        guard PQconsumeInput(handle) == 1 else {
            throw connectionError
        }
        var channels: [String] = []
        while let notification = PQnotifies(handle) {
            channels.append(String(cString: notification.pointee.relname))
            PQfreemem(notification)
        }
        return channels
    }
}

extension PGConnection {
    /// Waits up to `timeoutMilliseconds` for the socket to become readable (a notification
    /// or a closed connection); true when it did.
    public func waitReadable(timeoutMilliseconds: Int32) throws -> Bool {
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, timeoutMilliseconds)
        if ready < 0 && errno != EINTR { throw PGError(.connection, "poll failed: errno \(errno)") }
        return ready > 0
    }
}
