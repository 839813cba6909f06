/// A work session's `session_type` on the wire: what the session is for. The server's
/// entity and the kit's share it.
public enum WorkSessionType: String, CaseIterable, Codable, Sendable {
    case inspection, repair, other
}

/// A work session's `status` on the wire (`draft` when created).
public enum WorkSessionStatus: String, CaseIterable, Codable, Sendable {
    case draft, active, done, archived
}
