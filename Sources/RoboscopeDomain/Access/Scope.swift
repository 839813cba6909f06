/// A permission a token carries (OAuth style, in its space-separated `scope` claim).
public enum Scope: String, Sendable, CaseIterable {
    /// The tenant's spaces, sessions, markers, details, presence, locks, the changes
    /// feed; WebSocket `subscribe`.
    case read
    /// Create, change and delete sessions, markers and details; presence and locks as itself.
    case write
    /// Create, change and delete spaces; break another subject's lock; remove another's presence.
    case admin
    /// The audit trail, histories, `as_of` reads, the integrity of the tenant's streams.
    case audit
    /// The integrity check of the whole log, and nothing else.
    case `operator`
}

/// The scopes a principal holds, each with the ones it includes (`admin` includes
/// `write`, which includes `read`; `audit` includes `read`; `operator` stands alone).
public struct Scopes: Hashable, Sendable, CustomStringConvertible {
    private var granted: Set<Scope>

    public init(_ scopes: some Sequence<Scope>) {
        var granted = Set<Scope>()
        for scope in scopes {
            granted.insert(scope)
            switch scope {
            case .admin: granted.formUnion([.write, .read])
            case .write, .audit: granted.insert(.read)
            case .read, .operator: break
            }
        }
        self.granted = granted
    }

    public static let all = Scopes(Scope.allCases)

    /// A `scope` claim: words separated by spaces; unknown words are ignored, and a claim
    /// that is absent or names no known word grants `read` only.
    public init(claim: String?) {
        self.init(claim: claim, ignoring: [])
    }

    /// The same, with `ignored` scopes read as unknown words (`operator` from an issuer not
    /// trusted with it).
    public init(claim: String?, ignoring ignored: Set<Scope>) {
        let words = (claim ?? "").split(whereSeparator: { $0 == " " || $0 == "\t" })
            .compactMap { Scope(rawValue: String($0)) }.filter { !ignored.contains($0) }
        self.init(words.isEmpty ? [.read] : words)
    }

    public func contains(_ scope: Scope) -> Bool { granted.contains(scope) }

    /// Whether every scope held here is held by `other` too.
    public func isSubset(of other: Scopes) -> Bool { granted.isSubset(of: other.granted) }

    /// The scopes held, in a fixed order, space-separated: what event metadata records.
    public var description: String {
        Scope.allCases.filter(granted.contains).map(\.rawValue).joined(separator: " ")
    }
}
