/// An error a client can act on. Its `code` maps to an HTTP status in one place
/// (the HTTP module); extra `details` go into the error body next to the message.
public struct DomainError: Error, Sendable, CustomStringConvertible {
    /// The codes are the wire vocabulary's (`ErrorCode`, shared with the kit).
    public typealias Code = ErrorCode

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
