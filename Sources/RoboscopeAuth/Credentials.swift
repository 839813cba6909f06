/// Who a bearer token speaks for, and what it may do.
public struct Credentials: Sendable, Equatable {
    public enum Scope: String, Sendable {
        /// Reads only: any write is refused with 403.
        case read
        /// Reads and writes.
        case write
    }

    /// Recorded as the actor of every event the request causes.
    public var subject: String
    public var scope: Scope

    public init(subject: String, scope: Scope) {
        self.subject = subject
        self.scope = scope
    }
}

/// Why a token was refused (the message goes into the 401 body).
public struct AuthenticationFailure: Error, Sendable, Equatable {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
}
