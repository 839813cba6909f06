import RoboscopeDomain

/// What a list may show a principal, as SQL parameters: the spaces of its tenant,
/// narrowed to its `spaces` claim when it has one (rule 2 of docs/security.md).
public struct Visibility: Hashable, Sendable {
    public var tenant: String
    public var spaces: [EntityID]?

    public init(tenant: String, spaces: [EntityID]? = nil) {
        self.tenant = tenant
        self.spaces = spaces
    }

    public init(_ principal: Principal) {
        self.init(
            tenant: principal.tenant, spaces: principal.spaces.map { $0.sorted { $0.description < $1.description } })
    }

    /// The `spaces` narrowing as a Postgres array literal (`{…}`), nil without one.
    var spacesParameter: String? {
        spaces.map { "{" + $0.map(\.description).joined(separator: ",") + "}" }
    }

    /// A condition on a space id column, with its two parameters numbered from `first`.
    func condition(spaceColumn column: String, first: Int) -> String {
        "\(column) IN (SELECT vt.space_id FROM space_tenants vt WHERE vt.tenant = $\(first))"
            + " AND ($\(first + 1)::uuid[] IS NULL OR \(column) = ANY($\(first + 1)::uuid[]))"
    }

    var parameters: PostgresBinds { [tenant, spacesParameter] }
}
