import Foundation
import Metrics
import RoboscopeDomain

/// Appends batches of events to the log, in one transaction each, through
/// `eventlog.append`, which checks versions and updates the projections.
public struct EventStore: Sendable {
    public let pool: PostgresPool
    /// Told after each commit, so gateways learn of new events without a NOTIFY
    /// inside the append's transaction.
    public let notifier: AppendNotifier?

    public init(pool: PostgresPool, notifier: AppendNotifier? = nil) {
        self.pool = pool
        self.notifier = notifier
    }

    /// Events appended through the API (a Prometheus counter once metrics are bootstrapped).
    static let appendedEvents = Counter(label: "roboscope_events_appended_total")

    /// Positions and versions of the appended events, in batch order.
    public struct Appended: Sendable, Hashable {
        public var position: Int64
        public var version: Int64
    }

    @discardableResult
    public func append(_ batch: AppendBatch) async throws -> [Appended] {
        guard !batch.events.isEmpty else { return [] }
        let document = StorageJSON.encodeString(BatchDocument(batch: batch))
        let appended = try await pool.translatingErrors { try Self.append(document, on: $0) }
        notifier?.signal()
        Self.appendedEvents.increment(by: appended.count)
        return appended
    }

    /// Appends on a connection the caller owns (tools, tests).
    public static func append(_ batch: AppendBatch, on connection: PGConnection) throws -> [Appended] {
        try append(StorageJSON.encodeString(BatchDocument(batch: batch)), on: connection)
    }

    static func append(_ document: String, on connection: PGConnection) throws -> [Appended] {
        do {
            let result = try connection.query("SELECT event_position, event_version FROM eventlog.append($1::jsonb)", [document])
            return (0..<result.rowCount).map { row in
                Appended(position: result.int64(row, 0) ?? 0, version: result.int64(row, 1) ?? 0)
            }
        } catch let error as PGError {
            throw StoreErrors.translate(error)
        }
    }
}
