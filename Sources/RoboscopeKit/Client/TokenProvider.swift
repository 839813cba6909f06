import Foundation

/// Where bearer tokens come from when the service has authentication on.
public protocol TokenProvider: Sendable {
    /// A token valid now.
    func token() async throws -> String
    /// The server refused the last token (401): the next `token()` must not return it.
    func invalidate() async
    /// A token fetched now, not a cached one: a live connection calls it before its
    /// token expires and sends the result with the `auth` op. By default,
    /// `invalidate()` then `token()`.
    func freshToken() async throws -> String
}

extension TokenProvider {
    public func freshToken() async throws -> String {
        await invalidate()
        return try await token()
    }
}

/// When a JWT says it expires (its `exp` claim), read without verifying: the kit only
/// schedules its refresh by it; the server does the checking.
public enum TokenExpiry {
    /// nil for a token that is not a JWT or has no numeric `exp` (an API token).
    public static func of(_ token: String) -> Date? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let exp = claims["exp"] as? Double
        else { return nil }
        return Date(timeIntervalSince1970: exp)
    }

    /// When to refresh a token expiring at `expiry`, seen at `now`: after 80 % of the
    /// lifetime left, and at least a second from now.
    static func refreshDelay(expiry: Date, now: Date) -> Duration {
        .milliseconds(Int64(max(1, expiry.timeIntervalSince(now) * 0.8) * 1000))
    }
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
