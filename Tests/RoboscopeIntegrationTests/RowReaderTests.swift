import Testing
import RoboscopeDomain
@testable import RoboscopePostgres

/// A stored row that does not hold what its column must throws, naming the source,
/// the column and the row; it never becomes a default (an epoch, an empty id, 0).
@Suite struct RowReaderTests {
    @Test func aCellThatIsNotWhatItsColumnMustHoldNamesItself() async throws {
        let connection = try TestDatabase.connect(try await TestDatabase.fresh("rowreader"))
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
                    && corrupt.key == "position 12"
                    && "\(corrupt)".contains("eventlog.events at position 12: column \(column)")
            }
        }
        #expect(try cells.optionalInt64(1) == nil, "a null where one is allowed is nil, not 0")
    }

    @Test func integersAreReadFromTheirDigitsAcrossTheWholeRange() async throws {
        let connection = try TestDatabase.connect(try await TestDatabase.fresh("rowints"))
        let result = try connection.query(
            "SELECT (-9223372036854775808)::bigint, 9223372036854775807::bigint, -5::bigint, 0::bigint, "
                + "'9223372036854775808'::text, '-'::text, ''::text, '1e3'::text, '18446744073709551615'::text, "
                + "'18446744073709551616'::text"
        )
        #expect(result.int64(0, 0) == .min)
        #expect(result.int64(0, 1) == .max)
        #expect(result.int64(0, 2) == -5)
        #expect(result.int64(0, 3) == 0)
        for column in 4...7 { #expect(result.int64(0, column) == nil, "column \(column)") }
        let cells = RowReader(result, row: 0, source: "test")
        #expect(try cells.uint64(8) == .max)
        #expect(throws: CorruptRow.self) { try cells.uint64(9) }
        #expect(throws: CorruptRow.self) { try cells.uint64(6) }
        #expect(throws: CorruptRow.self) { try cells.uint64(2) }
    }

    @Test func typedBindsReachPostgresAsTheirOwnValues() async throws {
        let connection = try TestDatabase.connect(try await TestDatabase.fresh("binds"))
        let id = EntityID("0b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11")!
        let result = try connection.query(
            """
            SELECT $1::bigint = 9007199254740993, $2::uuid = '0b6c7f1e-2c1a-4c51-9a57-3f0a5a8e4b11', $3::boolean, \
            $4::float8 = 0.1, $5::text, $6::text IS NULL, $7::text
            """,
            [Int64(9_007_199_254_740_993), id, true, 0.1, "it's", nil, StreamType.workSession]
        )
        for column in 0..<4 { #expect(result.string(0, column) == "t", "column \(column)") }
        #expect(result.string(0, 4) == "it's")
        #expect(result.string(0, 5) == "t")
        #expect(result.string(0, 6) == "work_session")
    }
}
