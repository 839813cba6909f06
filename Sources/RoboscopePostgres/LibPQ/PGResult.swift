import CLibPQ

/// Owns one `PGresult`, freed exactly once when the value goes away.
public final class PGResult {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        PQclear(handle)
    }

    public var rowCount: Int { Int(PQntuples(handle)) }
    public var columnCount: Int { Int(PQnfields(handle)) }

    /// The text of a cell, or nil for SQL NULL.
    public func string(_ row: Int, _ column: Int) -> String? {
        guard PQgetisnull(handle, Int32(row), Int32(column)) == 0 else { return nil }
        return String(cString: PQgetvalue(handle, Int32(row), Int32(column)))
    }

    /// The raw bytes of a cell, or nil for SQL NULL, without building a `String`.
    public func bytes(_ row: Int, _ column: Int) -> UnsafeRawBufferPointer? {
        guard PQgetisnull(handle, Int32(row), Int32(column)) == 0 else { return nil }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return UnsafeRawBufferPointer(start: PQgetvalue(handle, Int32(row), Int32(column)), count: length)
    }

    public func int64(_ row: Int, _ column: Int) -> Int64? {
        string(row, column).flatMap { Int64($0) }
    }

    public func bool(_ row: Int, _ column: Int) -> Bool? {
        string(row, column).map { $0 == "t" }
    }

    public var columnNames: [String] {
        (0..<columnCount).map { String(cString: PQfname(handle, Int32($0))) }
    }
}
