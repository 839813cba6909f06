/// What every command needs besides its input: the time and who is acting.
public struct CommandContext: Sendable {
    public var now: Timestamp
    public var provenance: Provenance
    /// SHA-256 (hex) of the request's `X-Lock-Token`, for enforced locks.
    public var lockTokenSHA256: String?

    public init(now: Timestamp, provenance: Provenance, lockTokenSHA256: String? = nil) {
        self.now = now
        self.provenance = provenance
        self.lockTokenSHA256 = lockTokenSHA256
    }

    /// The acting principal's tenant: the owner of a space it creates.
    public var tenant: String? { provenance.tenant }

    func metadata(causedBy cause: EntityID? = nil) -> EventMetadata {
        EventMetadata(provenance, causationID: cause)
    }
}

/// Optimistic concurrency: a client that names a version must name the current one.
public enum VersionCheck {
    public static func require(_ expected: Int64?, current: Int64, entity: String, id: EntityID) throws {
        guard let expected, expected != current else { return }
        throw DomainError(
            .versionConflict,
            "\(entity) \(id) is at version \(current), not \(expected)",
            details: ["current_version": .integer(current), "expected_version": .integer(expected)]
        )
    }
}
