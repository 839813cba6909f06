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

    /// A cell's integer, parsed from its digits (no `String` between): nil for NULL or
    /// for text that is not a decimal integer in range.
    public func int64(_ row: Int, _ column: Int) -> Int64? {
        guard let text = bytes(row, column), !text.isEmpty else { return nil }
        let negative = text[0] == UInt8(ascii: "-")
        guard !negative || text.count > 1 else { return nil }
        var value: Int64 = 0
        for byte in text.dropFirst(negative ? 1 : 0) {
            guard byte >= 48, byte <= 57 else { return nil }
            // Accumulating downwards reaches Int64.min, which has no positive twin.
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowAgain) = shifted.subtractingReportingOverflow(Int64(byte - 48))
            guard !overflow, !overflowAgain else { return nil }
            value = next
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    public func bool(_ row: Int, _ column: Int) -> Bool? {
        string(row, column).map { $0 == "t" }
    }

    /// Where the column `name` is (as the query names it, folded to lower case): read
    /// rows by name, not by a place counted in a column list.
    public func column(_ name: String) throws -> Int {
        let index = Int(PQfnumber(handle, name))
        guard index >= 0 else { throw PGError(.statement, "the result has no column \(name)") }
        return index
    }

    public var columnNames: [String] {
        (0..<columnCount).map { String(cString: PQfname(handle, Int32($0))) }
    }
}
