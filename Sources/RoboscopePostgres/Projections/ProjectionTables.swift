/// The current-state tables and their keys, as eventlog.project() writes them.
public enum ProjectionTables {
    public static let all: [(name: String, key: String)] = [
        ("spaces", "id"), ("work_sessions", "id"), ("markers", "id"), ("marker_details", "marker_id"),
        ("session_locks", "work_session_id"), ("space_tenants", "space_id"),
    ]
}
