import Foundation
import Testing
import RoboscopePostgres

/// How a NOTIFY reaches a connection that also runs queries (the gateway's log tailer).
@Suite struct NotificationTests {
    /// Postgres sends a listening backend its notifications when its transaction ends,
    /// before ReadyForQuery, so libpq takes one that came during a query into its own
    /// queue with the query's result. The socket then has nothing more to read: a
    /// follower that waited on the socket after its read slept through the notification
    /// until its next poll (half a second: the fan-out's rare 0.5 s deliveries).
    @Test func aNotificationSentDuringAQueryWaitsInLibpqNotOnTheSocket() async throws {
        let url = try await TestDatabase.fresh("notify")
        let (onSocket, drained) = try await onOwnThread { () throws -> (Bool, [String]) in
            let listener = try TestDatabase.connect(url)
            try AppendNotifier.listen(on: listener)
            let listenerPID = try listener.query("SELECT pg_backend_pid()").int64(0, 0)!
            let notifier = Handed(try TestDatabase.connect(url))
            let sent = Thread {
                // Once the listener's query is under way, notify.
                while (try? notifier.value.query(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = 'PgSleep'", [String(listenerPID)]
                ).rowCount) != 1 {
                    usleep(1_000)
                }
                _ = try? notifier.value.execute("NOTIFY \(AppendNotifier.channel)")
            }
            sent.start()
            _ = try listener.query("SELECT pg_sleep(1)")
            // Sent before ReadyForQuery, it would be on the socket by now if libpq had left it there.
            return (try listener.waitReadable(timeoutMilliseconds: 0), try listener.drainNotifications())
        }
        #expect(!onSocket, "the notification came in with the query's result")
        #expect(drained == [AppendNotifier.channel])
    }
}
