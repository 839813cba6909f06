/// The kinds of stream in the event log; each entity is one stream.
public enum StreamType: String, Sendable, CaseIterable, Codable {
    case space
    case workSession = "work_session"
    case marker
    case markerDetails = "marker_details"
    /// Lock acquisitions and releases of one work session (audit only).
    case workSessionLock = "work_session_lock"
    /// A token revocation made and lifted (audit only; `public.token_revocations` is what
    /// is in force). Its events belong to a tenant, not to a space.
    case tokenRevocation = "token_revocation"

    /// The kind in words, as messages name it: `work session`, `marker details`.
    public var spokenName: String { String(rawValue.map { $0 == "_" ? " " : $0 }) }
}
