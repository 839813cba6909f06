/// What every REST operation and WebSocket op needs (docs/security.md's table, printed by
/// `roboscope scopes`; docs/openapi.yaml names it per operation as `x-required-scope`).
/// The routes check it through `Gate`; `TenancyMatrixTests` tries each operation with the
/// scopes below it and with it, against this table, so the table cannot drift from what
/// the code enforces.
public struct OperationScope: Sendable, Hashable {
    /// `GET /api/v1/spaces`, or a WebSocket op (`subscribe`).
    public var operation: String
    /// `read`, `write`, `admin`, `audit`, `operator`, `admin or operator`, `token` (any
    /// valid token) or `none` (open).
    public var required: String
    /// What more it takes, or what else it allows.
    public var note: String

    public init(_ operation: String, _ required: String, _ note: String = "") {
        self.operation = operation
        self.required = required
        self.note = note
    }
}

public enum OperationScopes {
    static let adminNote = "`admin`: its own tenant's; `operator`: every tenant's"

    public static let rest: [OperationScope] = [
        OperationScope("GET /api/v1/spaces", "read"),
        OperationScope("POST /api/v1/spaces", "admin"),
        OperationScope("GET /api/v1/spaces/{id}", "read"),
        OperationScope("PATCH /api/v1/spaces/{id}", "admin"),
        OperationScope("DELETE /api/v1/spaces/{id}", "admin"),
        OperationScope("GET /api/v1/spaces/{id}/history", "audit"),
        OperationScope("GET /api/v1/work-sessions", "read"),
        OperationScope("POST /api/v1/work-sessions", "write"),
        OperationScope("GET /api/v1/work-sessions/{id}", "read"),
        OperationScope("PATCH /api/v1/work-sessions/{id}", "write"),
        OperationScope("DELETE /api/v1/work-sessions/{id}", "write"),
        OperationScope("GET /api/v1/work-sessions/{id}/history", "audit"),
        OperationScope("GET /api/v1/markers", "read", "`as_of` needs `audit`"),
        OperationScope("POST /api/v1/markers", "write"),
        OperationScope("POST /api/v1/markers/bulk", "write"),
        OperationScope("GET /api/v1/markers/{id}", "read", "`as_of` needs `audit`"),
        OperationScope("PATCH /api/v1/markers/{id}", "write"),
        OperationScope("DELETE /api/v1/markers/{id}", "write"),
        OperationScope("GET /api/v1/markers/{id}/history", "audit"),
        OperationScope("GET /api/v1/markers/{id}/details", "read"),
        OperationScope("PUT /api/v1/markers/{id}/details", "write"),
        OperationScope("DELETE /api/v1/markers/{id}/details", "write"),
        OperationScope("POST /api/v1/markers/{id}/details/calculate", "write"),
        OperationScope("POST /api/v1/presence/{work_session_id}", "write", "as itself only"),
        OperationScope("GET /api/v1/presence/{work_session_id}", "read"),
        OperationScope("DELETE /api/v1/presence/{work_session_id}/{user_id}", "write", "another user's: `admin`"),
        OperationScope("POST /api/v1/locks/{work_session_id}", "write"),
        OperationScope("GET /api/v1/locks/{work_session_id}", "read"),
        OperationScope(
            "DELETE /api/v1/locks/{work_session_id}", "write",
            "with its token, as the subject that took it; `force=true`: `admin`"),
        OperationScope(
            "POST /api/v1/locks/{work_session_id}/extend", "write", "with its token, as the subject that took it"),
        OperationScope("GET /api/v1/audit", "audit"),
        OperationScope("GET /api/v1/changes", "read"),
        OperationScope("GET /api/v1/realtime", "token"),
        OperationScope(
            "GET /api/v1/integrity", "audit", "without `work_session_id` or `space_id` (the whole log): `operator`"),
        OperationScope("GET /api/v1/checkpoints/latest", "audit"),
        OperationScope("GET /api/v1/checkpoints/key", "audit"),
        OperationScope("GET /api/v1/proofs/inclusion", "audit"),
        OperationScope("GET /api/v1/proofs/consistency", "audit"),
        OperationScope("GET /api/v1/proofs/entries", "audit", "not with a token narrowed to some `spaces`"),
        OperationScope("POST /api/v1/admin/revocations", "admin or operator", adminNote + ", and keys (`kid`)"),
        OperationScope("GET /api/v1/admin/revocations", "admin or operator", adminNote),
        OperationScope("DELETE /api/v1/admin/revocations/{id}", "admin or operator", adminNote),
        OperationScope("GET /api/v1/admin/connections", "admin or operator", adminNote),
        OperationScope("DELETE /api/v1/admin/connections", "admin or operator", adminNote),
        OperationScope("GET /healthz", "none"),
        OperationScope("GET /readyz", "none"),
        OperationScope("GET /metrics", "none", "bind it to an internal port (`--ops-port`)"),
        OperationScope("GET /console", "none", "the page only; its data comes through the API with an `audit` token"),
    ]

    public static let webSocket: [OperationScope] = [
        OperationScope(
            "auth", "token", "the first message of a browser's socket; later, a refresh keeping subject and tenant"),
        OperationScope("subscribe", "read"),
        OperationScope("unsubscribe", "token"),
        OperationScope("presence", "write", "as itself only"),
    ]

    /// The table of docs/security.md.
    public static func markdown() -> String {
        var lines = ["| operation | needs | also |", "| --- | --- | --- |"]
        for entry in rest {
            lines.append("| `\(entry.operation)` | \(entry.required) | \(entry.note) |")
        }
        for entry in webSocket {
            lines.append("| WebSocket `\(entry.operation)` | \(entry.required) | \(entry.note) |")
        }
        return lines.joined(separator: "\n")
    }
}
