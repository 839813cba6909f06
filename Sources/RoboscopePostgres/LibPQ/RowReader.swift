import RoboscopeDomain
import RoboscopeProofs

/// Reads one row of a result, each cell as the type its column must hold. A cell that
/// does not hold it throws `CorruptRow`, naming what was read, the column and the
/// row's key: in an audit system a damaged row must fail loudly, never turn into
/// plausible data (a default actor, the epoch, a made-up id).
struct RowReader {
    let result: PGResult
    let row: Int
    /// What the rows are (`eventlog.events`), for the error.
    let source: String
    /// The row's key for the error (its position), set once it is read.
    var key: String?

    init(_ result: PGResult, row: Int, source: String) {
        self.result = result
        self.row = row
        self.source = source
    }

    func isNull(_ column: Int) -> Bool { result.bytes(row, column) == nil }

    func text(_ column: Int) throws -> String {
        guard let text = result.string(row, column) else { throw corrupt(column, "is null") }
        return text
    }

    func optionalText(_ column: Int) -> String? { result.string(row, column) }

    func int64(_ column: Int) throws -> Int64 {
        guard !isNull(column) else { throw corrupt(column, "is null") }
        guard let value = result.int64(row, column) else { throw corrupt(column, "is not an integer") }
        return value
    }

    func optionalInt64(_ column: Int) throws -> Int64? {
        isNull(column) ? nil : try int64(column)
    }

    func uint64(_ column: Int) throws -> UInt64 {
        guard let digits = result.bytes(row, column) else { throw corrupt(column, "is null") }
        var value: UInt64 = 0
        for byte in digits {
            guard byte >= 48, byte <= 57 else { throw corrupt(column, "is not an unsigned integer") }
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowAgain) = shifted.addingReportingOverflow(UInt64(byte - 48))
            guard !overflow, !overflowAgain else { throw corrupt(column, "is not an unsigned integer") }
            value = next
        }
        guard !digits.isEmpty else { throw corrupt(column, "is not an unsigned integer") }
        return value
    }

    func id(_ column: Int) throws -> EntityID {
        guard let id = EntityID(try text(column)) else { throw corrupt(column, "is not a UUID") }
        return id
    }

    func optionalID(_ column: Int) throws -> EntityID? {
        isNull(column) ? nil : try id(column)
    }

    /// A timestamp selected as epoch microseconds.
    func timestamp(_ column: Int) throws -> Timestamp {
        Timestamp(microsecondsSinceEpoch: try int64(column))
    }

    func bytes(_ column: Int) throws -> [UInt8] {
        guard let bytes = result.bytes(row, column) else { throw corrupt(column, "is null") }
        return Array(bytes)
    }

    /// The cell's bytes in place, valid while `result` lives (no copy, for parsing).
    func borrowedBytes(_ column: Int) throws -> UnsafeRawBufferPointer {
        guard let bytes = result.bytes(row, column) else { throw corrupt(column, "is null") }
        return bytes
    }

    /// A `bytea` cell, which the text format sends as `\x` and hex digits.
    func bytea(_ column: Int) throws -> [UInt8] {
        let cell = try borrowedBytes(column)
        guard cell.count >= 2, cell[0] == UInt8(ascii: "\\"), cell[1] == UInt8(ascii: "x"),
            let bytes = Hex.decode(digits: cell.dropFirst(2))
        else { throw corrupt(column, "is not bytea") }
        return bytes
    }

    func optionalBytes(_ column: Int) -> [UInt8]? {
        result.bytes(row, column).map { Array($0) }
    }

    func corrupt(_ column: Int, _ problem: String) -> CorruptRow {
        let name = column < result.columnCount ? result.columnNames[column] : "#\(column)"
        return CorruptRow(source: source, column: name, key: key, problem: problem)
    }
}

/// A query's columns, declared once and in order: its select list is made of the cases'
/// SQL (`selectList`), so a case's raw value is its column's place, and a reader names
/// the cell it reads (`row.int64(Column.position)`) instead of counting a column list.
protocol SelectedColumn: RawRepresentable, CaseIterable where RawValue == Int, AllCases == [Self] {
    /// What the select list says for this column.
    var sql: String { get }
}

extension SelectedColumn {
    static var selectList: String { allCases.map(\.sql).joined(separator: ", ") }
}

extension PGResult {
    func string(_ row: Int, _ column: some SelectedColumn) -> String? { string(row, column.rawValue) }
    func bytes(_ row: Int, _ column: some SelectedColumn) -> UnsafeRawBufferPointer? { bytes(row, column.rawValue) }
}

extension RowReader {
    func isNull(_ column: some SelectedColumn) -> Bool { isNull(column.rawValue) }
    func text(_ column: some SelectedColumn) throws -> String { try text(column.rawValue) }
    func optionalText(_ column: some SelectedColumn) -> String? { optionalText(column.rawValue) }
    func int64(_ column: some SelectedColumn) throws -> Int64 { try int64(column.rawValue) }
    func optionalInt64(_ column: some SelectedColumn) throws -> Int64? { try optionalInt64(column.rawValue) }
    func uint64(_ column: some SelectedColumn) throws -> UInt64 { try uint64(column.rawValue) }
    func id(_ column: some SelectedColumn) throws -> EntityID { try id(column.rawValue) }
    func optionalID(_ column: some SelectedColumn) throws -> EntityID? { try optionalID(column.rawValue) }
    func timestamp(_ column: some SelectedColumn) throws -> Timestamp { try timestamp(column.rawValue) }
    func bytes(_ column: some SelectedColumn) throws -> [UInt8] { try bytes(column.rawValue) }
    func optionalBytes(_ column: some SelectedColumn) -> [UInt8]? { optionalBytes(column.rawValue) }
    func bytea(_ column: some SelectedColumn) throws -> [UInt8] { try bytea(column.rawValue) }
    func corrupt(_ column: some SelectedColumn, _ problem: String) -> CorruptRow { corrupt(column.rawValue, problem) }
}

/// A stored row that does not hold what its column should: a bug or a hand edit,
/// never a client's mistake.
public struct CorruptRow: Error, CustomStringConvertible {
    public let source: String
    public let column: String
    public let key: String?
    public let problem: String

    public var description: String {
        "\(source)\(key.map { " at \($0)" } ?? ""): column \(column) \(problem)"
    }
}

extension PGResult {
    /// The one integer a `count(*)` or `coalesce(max(…), 0)` answers; anything else throws.
    func scalar(_ source: String) throws -> Int64 {
        guard rowCount == 1 else {
            throw CorruptRow(source: source, column: "1", key: nil, problem: "answered \(rowCount) rows, not one")
        }
        return try RowReader(self, row: 0, source: source).int64(0)
    }
}
