import Foundation
import RoboscopeDomain

/// Appends batches of events to the log, in one transaction each, through
/// `eventlog.append`, which checks versions and updates the projections.
public struct EventStore: Sendable {
    public let pool: PostgresPool

    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Positions and versions of the appended events, in batch order.
    public struct Appended: Sendable, Hashable {
        public var position: Int64
        public var version: Int64
    }

    @discardableResult
    public func append(_ batch: AppendBatch) async throws -> [Appended] {
        guard !batch.events.isEmpty else { return [] }
        let document = StorageJSON.encodeString(BatchDocument(batch: batch))
        do {
            return try await pool.withConnection { connection in
                try Self.append(document, on: connection)
            }
        } catch let error as PGError {
            throw StoreErrors.translate(error)
        }
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
