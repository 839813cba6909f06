/// Turns space requests into events. Pure: the caller reads state and appends.
public enum SpaceCommands {
    static var urlFields: [(String, WritableKeyPath<Space, String?>)] {
        [
            ("model_glb_url", \.modelGlbURL), ("model_usdc_url", \.modelUsdcURL),
            ("preview_url", \.previewURL), ("scan_url", \.scanURL), ("ml_model_url", \.mlModelURL),
        ]
    }

    public static func create(_ body: FieldReader, _ context: CommandContext) throws -> (Space, AppendBatch) {
        let id = try body.id("id") ?? .random()
        var space = Space(
            id: id, tenant: context.tenant,
            key: try validKey(body.requiredString("key", maxLength: Limits.keyLength)),
            name: try body.requiredString("name", maxLength: Limits.nameLength),
            version: 1, createdAt: context.now, updatedAt: context.now
        )
        try apply(body, to: &space)
        let event = PendingEvent(
            stream: StreamRef(.space, id), expectedVersion: .noStream, type: .spaceCreated,
            payload: .space(space), metadata: context.metadata()
        )
        return (space, AppendBatch(events: [event], locks: [.spaceKey(space.key, tenant: space.tenant)]))
    }

    public static func update(
        _ current: Space, _ body: FieldReader, expectedVersion: Int64?, _ context: CommandContext
    ) throws -> (Space, AppendBatch) {
        try VersionCheck.require(expectedVersion, current: current.version, entity: "space", id: current.id)
        var space = current
        if body.contains("key") {
            space.key = try validKey(body.requiredString("key", maxLength: Limits.keyLength))
        }
        if body.contains("name") {
            space.name = try body.requiredString("name", maxLength: Limits.nameLength)
        }
        try apply(body, to: &space)
        space.version += 1
        space.updatedAt = context.now
        let stream = StreamRef(.space, space.id)
        let event = PendingEvent(
            stream: stream, expectedVersion: .exactly(current.version), type: .spaceUpdated,
            payload: .space(space), metadata: context.metadata()
        )
        return (
            space,
            AppendBatch(
                events: [event],
                locks: [
                    .exclusive(stream), .spaceKey(current.key, tenant: current.tenant),
                    .spaceKey(space.key, tenant: space.tenant),
                ])
        )
    }

    /// Deletes the space and, through their own events, its work sessions and their markers.
    public static func delete(
        _ space: Space, expectedVersion: Int64?, sessions: [SessionContents], _ context: CommandContext
    ) throws -> AppendBatch {
        try VersionCheck.require(expectedVersion, current: space.version, entity: "space", id: space.id)
        let stream = StreamRef(.space, space.id)
        let event = PendingEvent(
            stream: stream, expectedVersion: .exactly(space.version), type: .spaceDeleted,
            payload: .deleted(Deletion(id: space.id)), metadata: context.metadata()
        )
        var batch = AppendBatch(
            events: [event], locks: [.exclusive(stream), .spaceKey(space.key, tenant: space.tenant)],
            expectedChildren: [ExpectedChildren(.sessionsOfSpace, of: space.id, are: sessions.map(\.session.id))]
        )
        for session in sessions {
            batch.events += WorkSessionCommands.cascade(session, causedBy: event, context)
            batch.expectedChildren += WorkSessionCommands.expectedChildren(session)
        }
        return batch
    }

    static func apply(_ body: FieldReader, to space: inout Space) throws {
        if body.contains("description") {
            space.description = try body.string("description", maxLength: Limits.descriptionLength, allowEmpty: true)
        }
        for (field, path) in urlFields where body.contains(field) {
            space[keyPath: path] = try validURL(body.string(field, maxLength: Limits.urlLength), field: field)
        }
        if body.contains("meta") {
            space.meta = try body.object("meta") ?? [:]
        }
        if body.contains("active") {
            guard let active = try body.bool("active") else { throw DomainError.invalid("active", "must not be null") }
            space.active = active
        }
    }

    static func validKey(_ key: String) throws -> String {
        guard key.unicodeScalars.allSatisfy({ !$0.properties.isWhitespace && $0.value >= 0x20 }) else {
            throw DomainError.invalid("key", "must not contain whitespace or control characters")
        }
        return key
    }

    /// An `http` or `https` URL with a host: apps and the console open these, and a
    /// `javascript:` or `data:` URL there would run in whoever clicks it.
    static func validURL(_ text: String?, field: String) throws -> String? {
        guard let text else { return nil }
        guard text.unicodeScalars.allSatisfy({ !$0.properties.isWhitespace && $0.value >= 0x20 && $0.value != 0x7F }),
            let colon = text.firstIndex(of: ":"), text.startIndex < colon
        else {
            throw DomainError.invalid(field, "not a URL")
        }
        let scheme = text[..<colon].lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw DomainError.invalid(field, "must be an http or https URL, not \(scheme.prefix(20)):")
        }
        let rest = text[text.index(after: colon)...]
        guard rest.hasPrefix("//"),
            let host = rest.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false).first,
            !host.isEmpty
        else {
            throw DomainError.invalid(field, "must be an http or https URL with a host")
        }
        return text
    }
}

/// A work session with what a cascading delete must remove under it.
public struct SessionContents: Sendable {
    public var session: WorkSession
    public var markers: [MarkerWithDetails]

    public init(session: WorkSession, markers: [MarkerWithDetails]) {
        self.session = session
        self.markers = markers
    }
}
