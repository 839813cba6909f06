import Testing
@testable import RoboscopePostgres

/// A stored row that does not hold what its column must throws, naming the source,
/// the column and the row; it never becomes a default (an epoch, an empty id, 0).
@Suite struct RowReaderTests {
    @Test func aCellThatIsNotWhatItsColumnMustHoldNamesItself() throws {
        let connection = try PGConnection(try TestDatabase.fresh("rowreader"))
        let result = try connection.query(
            "SELECT 'x'::text AS position, NULL::text AS type, 'not-a-uuid'::text AS stream_id, 7::bigint AS version"
        )
        var cells = RowReader(result, row: 0, source: "eventlog.events")
        cells.key = "position 12"
        #expect(try cells.int64(3) == 7)
        for (read, column, problem) in [
            ({ _ = try cells.int64(0) }, "position", "is not an integer"),
            ({ _ = try cells.text(1) }, "type", "is null"),
            ({ _ = try cells.id(2) }, "stream_id", "is not a UUID"),
        ] as [(() throws -> Void, String, String)] {
            #expect {
                try read()
            } throws: { error in
                guard let corrupt = error as? CorruptRow else { return false }
                return corrupt.source == "eventlog.events" && corrupt.column == column && corrupt.problem == problem
                    && corrupt.key == "position 12" && "\(corrupt)".contains("eventlog.events at position 12: column \(column)")
            }
        }
        #expect(try cells.optionalInt64(1) == nil, "a null where one is allowed is nil, not 0")
    }
}
