import Synchronization

/// What one tenant may use (`--tenant-plans-file`, docs/operations.md "Running many
/// customers"); a field left out is the default plan's, else the flag's.
public struct TenantPlan: Hashable, Sendable {
    /// Requests per second of all its subjects together (bursts of twice as many).
    public var rateLimit: Double?
    /// WebSocket connections it may hold on one gateway process.
    public var maxConnections: Int?
    /// Long polls of the changes feed it may have waiting in one process.
    public var maxLongPolls: Int?
    /// The part of each database pool its requests may hold at once.
    public var dbShare: Double?

    public init(rateLimit: Double? = nil, maxConnections: Int? = nil, maxLongPolls: Int? = nil, dbShare: Double? = nil)
    {
        self.rateLimit = rateLimit
        self.maxConnections = maxConnections
        self.maxLongPolls = maxLongPolls
        self.dbShare = dbShare
    }

    /// This plan, its fields left out filled from `fallback`.
    func over(_ fallback: TenantPlan) -> TenantPlan {
        TenantPlan(
            rateLimit: rateLimit ?? fallback.rateLimit, maxConnections: maxConnections ?? fallback.maxConnections,
            maxLongPolls: maxLongPolls ?? fallback.maxLongPolls, dbShare: dbShare ?? fallback.dbShare)
    }
}

/// The plans file: a default plan and each named tenant's.
public struct PlanBook: Hashable, Sendable {
    public var defaultPlan = TenantPlan()
    public var tenants: [String: TenantPlan] = [:]

    public init(defaultPlan: TenantPlan = TenantPlan(), tenants: [String: TenantPlan] = [:]) {
        self.defaultPlan = defaultPlan
        self.tenants = tenants
    }

    /// `tenant`'s plan, field by field: its own, else the default's (nil: the flag's).
    public func plan(for tenant: String) -> TenantPlan {
        (tenants[tenant] ?? TenantPlan()).over(defaultPlan)
    }

    /// `{"default": {...}, "tenants": {"acme": {...}}}`; refused with a message naming the
    /// field for anything else (an unknown field too: a typo must not go unnoticed).
    public static func parse(_ document: JSONValue) throws -> PlanBook {
        guard case .object(let top) = document else { throw PlanError("expected a JSON object") }
        for key in top.keys where key != "default" && key != "tenants" {
            throw PlanError("\(key): unknown field (default, tenants)")
        }
        var book = PlanBook()
        if let value = top["default"] { book.defaultPlan = try plan(value, at: "default") }
        if let value = top["tenants"] {
            guard case .object(let tenants) = value else {
                throw PlanError("tenants: expected an object of plans by tenant")
            }
            for (tenant, value) in tenants {
                guard TenantName.isValid(tenant) else {
                    throw PlanError("tenants.\(tenant.prefix(100)): not a tenant name")
                }
                book.tenants[tenant] = try plan(value, at: "tenants.\(tenant)")
            }
        }
        return book
    }

    static func plan(_ value: JSONValue, at path: String) throws -> TenantPlan {
        guard case .object(let fields) = value else { throw PlanError("\(path): expected an object") }
        var plan = TenantPlan()
        for (key, value) in fields {
            let number = value.doubleValue
            switch key {
            case "rate_limit":
                guard let number, number > 0, number <= 1_000_000 else {
                    throw PlanError("\(path).rate_limit: 0 < rate <= 1000000")
                }
                plan.rateLimit = number
            case "max_connections", "max_long_polls":
                guard let number, number >= 1, number <= 10_000_000, number.rounded() == number else {
                    throw PlanError("\(path).\(key): a whole number from 1 to 10000000")
                }
                if key == "max_connections" {
                    plan.maxConnections = Int(number)
                } else {
                    plan.maxLongPolls = Int(number)
                }
            case "db_share":
                guard let number, number > 0, number <= 1 else {
                    throw PlanError("\(path).db_share: more than 0, at most 1")
                }
                plan.dbShare = number
            default:
                throw PlanError("\(path).\(key): unknown field (rate_limit, max_connections, max_long_polls, db_share)")
            }
        }
        return plan
    }
}

public struct PlanError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// The plans in force in this process, replaced whole when the file changes; read by the
/// rate limit, the long polls, the pools and the gateway at each decision.
public final class TenantPlans: Sendable {
    private let book: Mutex<PlanBook>

    public init(_ book: PlanBook = PlanBook()) {
        self.book = Mutex(book)
    }

    public func plan(for tenant: String) -> TenantPlan {
        book.withLock { $0.plan(for: tenant) }
    }

    public func replace(with book: PlanBook) {
        self.book.withLock { $0 = book }
    }

    public var current: PlanBook { book.withLock { $0 } }
}
