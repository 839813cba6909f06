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
            throw PGError(.connection, Self.trimmed(String(cString: PQerrorMessage(handle))))
        }
        var channels: [String] = []
        while let notification = PQnotifies(handle) {
            channels.append(String(cString: notification.pointee.relname))
            PQfreemem(notification)
        }
        return channels
    }
}
