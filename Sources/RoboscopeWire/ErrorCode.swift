/// The `code` of every error the service answers (REST bodies, WebSocket `error`
/// messages): the one list of them, which the server raises and the kit matches
/// (`VocabularyTests` fails when the kit spells one by hand). docs/api.md says what each
/// means to a client.
public struct ErrorCode: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    // Input.
    /// The body is not JSON, or a query parameter cannot be parsed.
    public static let malformedRequest = ErrorCode("malformed_request")
    /// A field fails validation; `field` names it.
    public static let invalidField = ErrorCode("invalid_field")
    public static let payloadTooLarge = ErrorCode("payload_too_large")
    /// A write whose body is not JSON: 415.
    public static let unsupportedMediaType = ErrorCode("unsupported_media_type")
    public static let methodNotAllowed = ErrorCode("method_not_allowed")
    /// Refusals of the HTTP layer, before a request reaches the router.
    public static let headersTooLarge = ErrorCode("headers_too_large")
    public static let requestTimeout = ErrorCode("request_timeout")
    public static let badRequest = ErrorCode("bad_request")
    /// A request naming a host this server does not answer for: 421.
    public static let misdirectedRequest = ErrorCode("host_not_allowed")

    // Entities.
    public static let notFound = ErrorCode("not_found")
    /// The entity's version is not the one the client expected.
    public static let versionConflict = ErrorCode("version_conflict")
    /// A unique value (a space `key`, an id) is already taken.
    public static let alreadyExists = ErrorCode("already_exists")
    /// An enforced lock is held by someone else; `holder` says who.
    public static let locked = ErrorCode("locked")

    // Who may.
    /// No bearer token, or one that does not verify.
    public static let unauthorized = ErrorCode("unauthorized")
    /// A token a revocation in force matches (`POST /admin/revocations`): 401.
    public static let tokenRevoked = ErrorCode("token_revoked")
    /// A visible resource, and a token whose scope does not allow the action.
    public static let forbidden = ErrorCode("forbidden")

    // Retries.
    /// Another request with the same idempotency key is being processed (409, Retry-After).
    public static let idempotencyKeyInProgress = ErrorCode("idempotency_key_in_progress")
    /// The key has a stored answer already: the caller gives that one (never sent as such).
    public static let idempotencyKeyAnswered = ErrorCode("idempotency_key_answered")
    /// The key was used for another request (422).
    public static let idempotencyKeyReused = ErrorCode("idempotency_key_reused")

    // Load and outages.
    /// Postgres or Redis cannot be reached.
    public static let unavailable = ErrorCode("service_unavailable")
    /// A write whose commit may or may not have been stored (its wait for the synchronous
    /// standby was cancelled, or the database's connection broke before its answer): 503
    /// with `Retry-After`; the retry with the same idempotency key stores it exactly once.
    public static let commitUnknown = ErrorCode("commit_unknown")
    /// Past a rate or a bound on what a client may have outstanding: 429 with
    /// `Retry-After`, or a WebSocket `error` with `retry_after`.
    public static let rateLimited = ErrorCode("rate_limited")
    /// The process holds as many unsent answers as its memory budget allows: 503, retry soon.
    public static let overloaded = ErrorCode("overloaded")
    /// A work session already holds `--presence-max-users` present users: 429.
    public static let presenceFull = ErrorCode("presence_full")
    /// A fault of the server's own; the body quotes the request id.
    public static let internalError = ErrorCode("internal_error")

    // The WebSocket protocol.
    /// A WebSocket message with an `op` the gateway does not know.
    public static let unknownOperation = ErrorCode("unknown_op")
    public static let alreadySubscribed = ErrorCode("already_subscribed")
    public static let notSubscribed = ErrorCode("not_subscribed")
    public static let tooManySubscriptions = ErrorCode("too_many_subscriptions")
    /// More presences on one connection than `--ws-max-presence`.
    public static let tooManyPresences = ErrorCode("too_many_presences")
    /// A `since` too far back: reload over REST and subscribe without it.
    public static let tooFarBehind = ErrorCode("too_far_behind")

    /// Every code the service answers.
    public static let all: [ErrorCode] = [
        malformedRequest, invalidField, payloadTooLarge, unsupportedMediaType, methodNotAllowed, headersTooLarge,
        requestTimeout, badRequest, misdirectedRequest, notFound, versionConflict, alreadyExists, locked, unauthorized,
        tokenRevoked, forbidden, idempotencyKeyInProgress, idempotencyKeyAnswered, idempotencyKeyReused, unavailable,
        commitUnknown,
        rateLimited, overloaded, presenceFull, internalError, unknownOperation, alreadySubscribed, notSubscribed,
        tooManySubscriptions, tooManyPresences, tooFarBehind,
    ]
}
