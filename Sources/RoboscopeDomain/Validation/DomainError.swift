/// An error a client can act on. Its `code` maps to an HTTP status in one place
/// (the HTTP module); extra `details` go into the error body next to the message.
public struct DomainError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The body is not JSON, or a query parameter cannot be parsed.
        public static let malformedRequest = Code("malformed_request")
        /// A field fails validation; `field` names it.
        public static let invalidField = Code("invalid_field")
        public static let notFound = Code("not_found")
        /// The entity's version is not the one the client expected.
        public static let versionConflict = Code("version_conflict")
        /// A unique value (a space `key`, an id) is already taken.
        public static let alreadyExists = Code("already_exists")
        public static let payloadTooLarge = Code("payload_too_large")
        /// An enforced lock is held by someone else; `holder` says who.
        public static let locked = Code("locked")
        /// Postgres or Redis cannot be reached.
        public static let unavailable = Code("service_unavailable")
        /// Past a rate or a bound on what a client may have outstanding: 429 with
        /// `Retry-After`, or a WebSocket `error` with `retry_after`.
        public static let rateLimited = Code("rate_limited")
        /// A work session already holds `--presence-max-users` present users: 429.
        public static let presenceFull = Code("presence_full")
    }

    public var code: Code
    public var message: String
    /// The field a validation error is about (`p1`, `markers[3].color`).
    public var field: String?
    /// Extra values for the body, such as `current_version`.
    public var details: JSONObject

    public init(_ code: Code, _ message: String, field: String? = nil, details: JSONObject = [:]) {
        self.code = code
        self.message = message
        self.field = field
        self.details = details
    }

    public static func invalid(_ field: String, _ problem: String) -> DomainError {
        DomainError(.invalidField, "\(field): \(problem)", field: field)
    }

    public static func notFound(_ entity: String, _ id: EntityID) -> DomainError {
        DomainError(.notFound, "\(entity) \(id) not found", details: ["id": .string(id.description)])
    }

    public var description: String { "\(code): \(message)" }

    /// The same error about a field nested under `prefix` (`markers[2]`).
    public func nested(under prefix: String) -> DomainError {
        guard let field else { return self }
        var copy = self
        copy.field = "\(prefix).\(field)"
        copy.message = "\(prefix).\(message)"
        return copy
    }
}

extension DomainError {
    /// A heartbeat of one user more than a session may hold (`--presence-max-users`).
    public static func presenceFull(_ maxUsers: Int) -> DomainError {
        DomainError(
            .presenceFull, "the work session holds \(maxUsers) present users already; retry later",
            field: "work_session_id", details: ["retry_after": .integer(5)])
    }
}
