import RoboscopeDomain

/// A value a statement can take as a parameter. libpq is given every parameter in text
/// form and the statement casts it (`$1::uuid`, `$2::bigint`); each type says once
/// how it is written, instead of every call site converting by hand.
public protocol PostgresBindable {
    var postgresText: String { get }
}

extension String: PostgresBindable {
    public var postgresText: String { self }
}

extension Int: PostgresBindable {
    public var postgresText: String { String(self) }
}

extension Int64: PostgresBindable {
    public var postgresText: String { String(self) }
}

extension UInt64: PostgresBindable {
    public var postgresText: String { String(self) }
}

extension Bool: PostgresBindable {
    public var postgresText: String { self ? "true" : "false" }
}

extension EntityID: PostgresBindable {
    public var postgresText: String { description }
}

extension StreamType: PostgresBindable {
    public var postgresText: String { rawValue }
}

/// Parameters of one statement; nil is SQL NULL.
public typealias PostgresBinds = [(any PostgresBindable)?]

extension Double: PostgresBindable {
    /// Swift's shortest representation that reads back as the same double.
    public var postgresText: String { "\(self)" }
}
