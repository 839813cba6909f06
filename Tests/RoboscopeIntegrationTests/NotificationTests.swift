import Foundation
import Testing
import Logging
import RoboscopePostgres

/// How a NOTIFY reaches a connection that also runs queries (the gateway's log tailer).
@Suite struct NotificationTests {
    /// A notification that reaches a listening connection before one of its queries ends
    /// (sent while it was idle, or with the query's end, before ReadyForQuery) is read by
    /// libpq into its own queue along with the query's result. The socket then has nothing
    /// more to read: a follower that waited on the socket after its read slept through the
    /// notification until its next poll (half a second: the fan-out's rare 0.5 s deliveries).
    @Test func aNotificationThatCameBeforeAQueryEndedWaitsInLibpqNotOnTheSocket() async throws {
        let url = try await TestDatabase.fresh("notify")
        let (onSocket, drained) = try await onOwnThread { () throws -> (Bool, [String]) in
            let listener = try TestDatabase.connect(url)
            try AppendNotifier.listen(on: listener)
            // Committed before the listener's query is sent: it arrives before that query's end.
            try TestDatabase.connect(url).execute("NOTIFY \(AppendNotifier.channel)")
            _ = try listener.query("SELECT 1")
            // Had libpq left it on the socket, it would be there by now.
            return (try listener.waitReadable(timeoutMilliseconds: 0), try listener.drainNotifications())
        }
        #expect(!onSocket, "libpq took the notification in with the query's result")
        #expect(drained == [AppendNotifier.channel])
    }

    /// The notifier's NOTIFY that fails on a cut connection is sent again once it has a
    /// new one (a lost notification only delays delivery, but need not).
    @Test func aNotifyCutOffWithItsConnectionIsSentOnTheNextOne() async throws {
        let url = try await TestDatabase.fresh("notify_cut")
        let listener = try TestDatabase.connect(url)
        try AppendNotifier.listen(on: listener)
        let notifier = AppendNotifier(url: url, logger: Logger(label: "test"))
        notifier.start()
        notifier.signal()
        try await eventually("the first NOTIFY arrives", within: 10) { try !listener.drainNotifications().isEmpty }

        // The timeout makes the call wait until the backend is gone, so the next NOTIFY
        // meets the cut connection.
        let admin = try TestDatabase.connect(url)
        let cut = try admin.query(
            """
            SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity
            WHERE datname = current_database() AND query LIKE 'NOTIFY%'
            """)
        #expect(cut.int64(0, 0) == 1, "the notifier's connection is cut")
        notifier.signal()
        try await eventually("the NOTIFY after the cut arrives", within: 10) {
            try !listener.drainNotifications().isEmpty
        }
        await notifier.stop()
    }
}
