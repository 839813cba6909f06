/// The data of `work_session.lock_acquired`, `.lock_extended`, `.lock_released` and `.lock_broken`, on the
/// session's `work_session_lock` stream (so the session's own `version` is untouched).
/// The fencing token of an acquisition is that event's version in the lock stream.
public struct LockAudit: Hashable, Sendable {
    public var workSessionID: EntityID
    public var holder: String
    public var ttlSeconds: Int64?
    public var enforce: Bool
    /// On an extension or release: the fencing token of the acquisition it concerns.
    public var fencingToken: Int64?
    /// On an acquisition: SHA-256 (hex) of the token, never the token itself.
    public var tokenSHA256: String?
}

extension LockAudit: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("work_session_id"); writer.value(workSessionID)
            writer.key("holder"); writer.value(holder)
            writer.key("ttl_seconds"); if let ttlSeconds { writer.value(ttlSeconds) } else { writer.null() }
            writer.key("enforce"); writer.value(enforce)
            writer.key("fencing_token"); if let fencingToken { writer.value(fencingToken) } else { writer.null() }
            writer.key("token_sha256"); writer.value(tokenSHA256)
        }
    }
}

extension LockAudit: Decodable {
    enum CodingKeys: String, CodingKey {
        case workSessionID = "work_session_id"
        case holder
        case ttlSeconds = "ttl_seconds"
        case enforce
        case fencingToken = "fencing_token"
        case tokenSHA256 = "token_sha256"
    }
}
