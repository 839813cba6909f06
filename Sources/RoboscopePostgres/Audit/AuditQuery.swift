import RoboscopeDomain

/// The filters of `GET /audit`, each served by an index that starts with the reader's
/// tenant (schema/migrations/0014_tenant_first_audit.sql).
public struct AuditQuery: Sendable, Equatable {
    public var spaceID: EntityID?
    public var workSessionID: EntityID?
    public var entityType: StreamType?
    public var entityID: EntityID?
    public var actor: String?
    public var type: String?
    /// Inclusive lower and exclusive upper bound on `recorded_at`.
    public var from: Timestamp?
    public var to: Timestamp?
    /// Entries after this position (the previous page's `next_after`), oldest first.
    public var after: Int64 = 0
    /// Newest first: entries before this position (the previous page's `next_before`;
    /// nil starts at the newest).
    public var descending = false
    public var before: Int64?
    public var limit: Int = 100
    /// The spaces whose events the reader may see (rule 2); nil: the whole log.
    public var visible: Visibility?

    public static let maxLimit = 1000

    public init() {}

    /// The WHERE clause and its parameters, with only the filters given, so the planner
    /// picks the index for what is there.
    func whereClause() -> (String, PostgresBinds) {
        var conditions = [descending ? "e.position < $1" : "e.position > $1"]
        var parameters: PostgresBinds = [descending ? (before ?? Int64.max) : after]
        func add(_ condition: (String) -> String, _ value: any PostgresBindable) {
            parameters.append(value)
            conditions.append(condition("$\(parameters.count)"))
        }
        if let spaceID { add({ "e.space_id = \($0)::uuid" }, spaceID) }
        if let workSessionID { add({ "e.work_session_id = \($0)::uuid" }, workSessionID) }
        if let entityType { add({ "e.stream_type = \($0)" }, entityType) }
        if let entityID { add({ "e.stream_id = \($0)::uuid" }, entityID) }
        if let actor { add({ "e.metadata->>'actor' = \($0)" }, actor) }
        if let type { add({ "e.type = \($0)" }, type) }
        if let from { add({ "e.recorded_at >= \($0)::timestamptz" }, from.formatted(.storage)) }
        if let to { add({ "e.recorded_at < \($0)::timestamptz" }, to.formatted(.storage)) }
        if let visible {
            // The tenant first: every filter's index starts with it (0014_tenant_first_audit.sql).
            add({ "e.tenant = \($0)" }, visible.tenant)
            if let spaces = visible.spacesParameter { add({ "e.space_id = ANY(\($0)::uuid[])" }, spaces) }
        }
        return (conditions.joined(separator: " AND "), parameters)
    }
}
