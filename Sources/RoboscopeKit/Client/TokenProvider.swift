import Foundation

/// Where bearer tokens come from when the service has authentication on.
public protocol TokenProvider: Sendable {
    /// A token valid now.
    func token() async throws -> String
    /// The server refused the last token (401): the next `token()` must not return it.
    func invalidate() async
}

/// A fixed token (an API token that does not expire).
public struct StaticTokenProvider: TokenProvider {
    let value: String

    /// Always `token`.
    public init(_ token: String) {
        value = token
    }

    public func token() async throws -> String { value }
    public func invalidate() async {}
}

/// A token fetched by `fetch` and refreshed `margin` before it expires (a device that
/// slept past the expiry gets a fresh one, not a stale one), one refresh at a time:
/// callers that ask while a refresh runs wait for that one.
public actor RefreshingTokenProvider: TokenProvider {
    public typealias Fetch = @Sendable () async throws -> (token: String, expiresAt: Date)

    private let fetch: Fetch
    private let margin: Duration
    private let clock: any KitClock
    private var current: (token: String, expiresAt: Date)?
    private var refreshing: Task<(token: String, expiresAt: Date), any Error>?

    /// Tokens from `fetch` (a token and when it expires), refreshed `refreshMargin` before
    /// they expire by `clock`.
    public init(refreshMargin: Duration = .seconds(60), clock: any KitClock = SystemClock(), fetch: @escaping Fetch) {
        self.fetch = fetch
        margin = refreshMargin
        self.clock = clock
    }

    public func token() async throws -> String {
        if let current, await clock.now().addingTimeInterval(margin.seconds) < current.expiresAt {
            return current.token
        }
        let refresh: Task<(token: String, expiresAt: Date), any Error>
        if let refreshing {
            refresh = refreshing
        } else {
            refresh = Task { try await fetch() }
            refreshing = refresh
        }
        defer { if refreshing == refresh { refreshing = nil } }
        let fresh = try await refresh.value
        current = fresh
        return fresh.token
    }

    public func invalidate() async {
        current = nil
    }
}
