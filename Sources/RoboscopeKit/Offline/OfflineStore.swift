import Foundation
import GRDB

/// The device's local store, one SQLite file: cached entities of the topics the app
/// opened with their cursors, and the outbox of writes not yet settled. Every change is
/// a transaction with `synchronous = FULL`: once a call returns, a crash or a power cut
/// cannot lose it. SQLite (through GRDB) rather than files: an outbox entry, the cache
/// rows it touches and a cursor move together or not at all.
public final class OfflineStore: Sendable {
    let database: DatabaseQueue

    /// Opens (or creates) the store at `path`; nil keeps it in memory (tests).
    public init(path: String?) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        database =
            try path.map { try DatabaseQueue(path: $0, configuration: configuration) }
            ?? DatabaseQueue(configuration: configuration)
        try database.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS entities (
                        kind TEXT NOT NULL, id TEXT NOT NULL, topic TEXT NOT NULL, body BLOB NOT NULL,
                        PRIMARY KEY (kind, id));
                    CREATE INDEX IF NOT EXISTS entities_topic ON entities (topic, kind);
                    CREATE TABLE IF NOT EXISTS cursors (
                        topic TEXT PRIMARY KEY, position INTEGER NOT NULL, topic_seq INTEGER);
                    CREATE TABLE IF NOT EXISTS outbox (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        key TEXT NOT NULL UNIQUE,
                        topic TEXT NOT NULL,
                        method TEXT NOT NULL, path TEXT NOT NULL, body BLOB,
                        line INTEGER,
                        sent INTEGER NOT NULL DEFAULT 0,
                        created_at REAL NOT NULL);
                    """)
            // Stores made before deletes carried a version gain the column in place.
            if try !db.columns(in: "outbox").contains(where: { $0.name == "if_match" }) {
                try db.execute(sql: "ALTER TABLE outbox ADD COLUMN if_match INTEGER")
            }
            // So do those made before writes carried their trace (their entries have none:
            // each send of one starts a trace of its own).
            if try !db.columns(in: "outbox").contains(where: { $0.name == "traceparent" }) {
                try db.execute(sql: "ALTER TABLE outbox ADD COLUMN traceparent TEXT")
            }
        }
    }

    // MARK: Cursors

    /// Where the stored copy of `topic` stands; nil before its first snapshot.
    public func cursor(for topic: Topic) throws -> TopicCursor? {
        try database.read { db in
            try Row.fetchOne(
                db, sql: "SELECT position, topic_seq FROM cursors WHERE topic = ?", arguments: [topic.description]
            )
            .map { TopicCursor(position: $0["position"], topicSeq: $0["topic_seq"]) }
        }
    }

    /// Drops everything stored of `topic`: its entities, its cursor and its outbox entries
    /// (the server says it is gone). Returns the outbox entries it dropped.
    @discardableResult
    public func forget(topic: Topic) throws -> [PendingWrite] {
        let dropped = try pending(topic: topic.description)
        try database.write { db in
            try db.execute(sql: "DELETE FROM entities WHERE topic = ?", arguments: [topic.description])
            try db.execute(sql: "DELETE FROM cursors WHERE topic = ?", arguments: [topic.description])
            try db.execute(sql: "DELETE FROM outbox WHERE topic = ?", arguments: [topic.description])
        }
        return dropped
    }

    /// Moves the stored cursor of `topic` (entities are moved with it by the session).
    public func setCursor(_ cursor: TopicCursor, for topic: Topic) throws {
        try database.write { db in try Self.setCursor(cursor, topic, db) }
    }

    static func setCursor(_ cursor: TopicCursor, _ topic: Topic, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO cursors (topic, position, topic_seq) VALUES (?, ?, ?)
                ON CONFLICT (topic) DO UPDATE SET position = excluded.position, topic_seq = excluded.topic_seq
                """, arguments: [topic.description, cursor.position, cursor.topicSeq])
    }

    // MARK: Entities

    func entities<T: Decodable>(_ type: T.Type, kind: String, topic: Topic) throws -> [T] {
        try database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT body FROM entities WHERE topic = ? AND kind = ? ORDER BY rowid",
                arguments: [topic.description, kind]
            )
            .map { try WireCoding.decoder().decode(T.self, from: $0["body"] as Data) }
        }
    }

    /// Replaces what the store holds of `topic` by a snapshot, and its cursor, at once.
    /// The writes the server had answered are in the snapshot, and their events are at
    /// or before its cursor, so they never come: they are settled with it. (The session
    /// sends nothing while it takes a snapshot, so every answered write is in it.)
    func replace(topic: Topic, with rows: [(kind: String, id: String, body: Data)], cursor: TopicCursor) throws {
        try database.write { db in
            try db.execute(sql: "DELETE FROM outbox WHERE topic = ? AND sent = 1", arguments: [topic.description])
            try db.execute(sql: "DELETE FROM entities WHERE topic = ?", arguments: [topic.description])
            for row in rows {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO entities (kind, id, topic, body) VALUES (?, ?, ?, ?)",
                    arguments: [row.kind, row.id, topic.description, row.body])
            }
            try Self.setCursor(cursor, topic, db)
        }
    }

    /// Applies one event's change and moves the cursor, at once; settles the outbox entry
    /// the event names (`client_mutation_id`). Returns false for an event the cursor has
    /// passed already (nothing changes).
    func apply(_ change: CachedChange, cursor: TopicCursor, topic: Topic) throws -> Bool {
        try database.write { db in
            let stored = try Row.fetchOne(
                db, sql: "SELECT position FROM cursors WHERE topic = ?", arguments: [topic.description])
            if let stored, cursor.position <= (stored["position"] as Int64) { return false }
            switch change.action {
            case .upsert(let kind, let id, let body):
                // An update keeps the row (and so its place in the list's creation order).
                try db.execute(
                    sql: """
                        INSERT INTO entities (kind, id, topic, body) VALUES (?, ?, ?, ?)
                        ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body, topic = excluded.topic
                        """, arguments: [kind, id, topic.description, body])
            case .delete(let kind, let id):
                try db.execute(sql: "DELETE FROM entities WHERE kind = ? AND id = ?", arguments: [kind, id])
            case .none:
                break
            }
            if let key = change.settles {
                try db.execute(sql: "DELETE FROM outbox WHERE key = ?", arguments: [key])
            }
            try Self.setCursor(cursor, topic, db)
            return true
        }
    }

    // MARK: Outbox

    /// Stores a write; it counts as queued once this returns (the transaction is on disk).
    @discardableResult
    public func enqueue(
        method: String, path: String, body: Data?, topic: String, line: Int? = nil,
        key: String = UUID().uuidString, ifMatch: Int64? = nil, traceParent: TraceParent = .random()
    ) throws -> PendingWrite {
        try database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO outbox (key, topic, method, path, body, line, created_at, if_match, traceparent)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    key, topic, method, path, body, line, Date().timeIntervalSince1970, ifMatch, traceParent.header,
                ])
            return PendingWrite(
                sequence: db.lastInsertedRowID, key: key, topic: topic, method: method, path: path,
                body: body, line: line, sent: false, ifMatch: ifMatch, traceParent: traceParent)
        }
    }

    /// The writes not settled yet, oldest first (of one topic, or all).
    public func pending(topic: String? = nil) throws -> [PendingWrite] {
        try database.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT seq, key, topic, method, path, body, line, sent, if_match, traceparent FROM outbox
                    WHERE ? IS NULL OR topic = ? ORDER BY seq
                    """, arguments: [topic, topic]
            ).map {
                PendingWrite(
                    sequence: $0["seq"], key: $0["key"], topic: $0["topic"], method: $0["method"], path: $0["path"],
                    body: $0["body"], line: $0["line"], sent: ($0["sent"] as Int64) != 0, ifMatch: $0["if_match"],
                    traceParent: ($0["traceparent"] as String?).flatMap(TraceParent.init))
            }
        }
    }

    /// The server answered it; it stays until its event arrives (`settle`), so reads keep
    /// showing it meanwhile.
    public func markSent(_ key: String) throws {
        try database.write { db in try db.execute(sql: "UPDATE outbox SET sent = 1 WHERE key = ?", arguments: [key]) }
    }

    /// Removes a write: settled, refused, or given up by the app.
    public func settle(_ key: String) throws {
        try database.write { db in try db.execute(sql: "DELETE FROM outbox WHERE key = ?", arguments: [key]) }
    }
}

/// A write in the outbox.
public struct PendingWrite: Sendable, Hashable {
    /// Its place in the queue: writes are sent in this order.
    public var sequence: Int64
    /// Its `Idempotency-Key`, the same on every send.
    public var key: String
    public var topic: String
    public var method: String
    /// Relative to `/api/v1`.
    public var path: String
    public var body: Data?
    /// The input line it came from (`roboscope-client apply`).
    public var line: Int?
    /// The server answered; its event has not been seen yet.
    public var sent: Bool
    /// Sent as `If-Match`: the version a delete was made against.
    public var ifMatch: Int64? = nil
    /// Sent as `traceparent` on every send: the write's one trace, across retries and
    /// restarts (nil for entries stored before writes carried one).
    public var traceParent: TraceParent? = nil
}

/// One event's effect on the cache.
struct CachedChange {
    enum Action {
        case upsert(kind: String, id: String, body: Data)
        case delete(kind: String, id: String)
        case none
    }

    var action: Action
    /// The outbox entry the event settles.
    var settles: String?
}
