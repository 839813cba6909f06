import RoboscopeDomain

/// Markers with their details, read column by column. Lists of hundreds of markers are
/// the service's largest reads: decoding each row from `to_jsonb` took most of such a
/// request, so the row's columns are read as they are (timestamps as microseconds,
/// figures as float8 text) and only the JSON columns are parsed.
enum MarkerRows {
    static let columns = """
        m.id, m.work_session_id, m.label, m.p1::text, m.p2::text, m.p3::text, m.p4::text, m.color, m.version,
        m.meta::text, m.custom_props::text, m.calibrated_data::text,
        (extract(epoch FROM m.created_at) * 1000000)::bigint, (extract(epoch FROM m.updated_at) * 1000000)::bigint,
        d.marker_id, d.center_location_long, d.center_location_cross, d.left_distance, d.right_distance,
        d.far_distance, d.near_distance, d.long_size, d.cross_size, d.custom_props::text,
        (extract(epoch FROM d.created_at) * 1000000)::bigint, (extract(epoch FROM d.updated_at) * 1000000)::bigint,
        d.version
        """
    static let tables = "FROM markers m LEFT JOIN marker_details d ON d.marker_id = m.id"
    static let select = "SELECT \(columns) \(tables)"
    /// `select` and, after the columns `decode` reads, the marker's space (the row keeps
    /// its route): with its work session, the place a write to the marker locks.
    static let selectWithSpace = "SELECT \(columns), m.space_id \(tables)"

    /// The work session's place of each row read with `selectWithSpace`.
    static func places(_ result: PGResult) throws -> [WorkSessionPlace] {
        try (0..<result.rowCount).map { row in
            let cells = Cells(result: result, row: row)
            return WorkSessionPlace(id: try cells.id(1), spaceID: try cells.id(27))
        }
    }

    static func decode(_ result: PGResult) throws -> [MarkerWithDetails] {
        try (0..<result.rowCount).map { row in
            let cells = Cells(result: result, row: row)
            let marker = Marker(
                id: try cells.id(0), workSessionID: try cells.id(1), label: result.string(row, 2),
                p1: try cells.point(3), p2: try cells.point(4), p3: try cells.point(5), p4: try cells.point(6),
                color: result.string(row, 7), version: try cells.int64(8), meta: try cells.object(9),
                customProps: try cells.object(10),
                calibratedData: try result.bytes(row, 11).map {
                    try JSONValueDecoder().decode(CalibratedData.self, from: $0)
                },
                createdAt: Timestamp(microsecondsSinceEpoch: try cells.int64(12)),
                updatedAt: Timestamp(microsecondsSinceEpoch: try cells.int64(13))
            )
            guard result.bytes(row, 14) != nil else { return MarkerWithDetails(marker: marker, details: nil) }
            let details = MarkerDetails(
                markerID: try cells.id(14),
                measurements: MarkerMeasurements(
                    centerLocationLong: try cells.double(15), centerLocationCross: try cells.double(16),
                    leftDistance: try cells.double(17), rightDistance: try cells.double(18),
                    farDistance: try cells.double(19),
                    nearDistance: try cells.double(20), longSize: try cells.double(21), crossSize: try cells.double(22)
                ),
                customProps: try cells.object(23),
                createdAt: Timestamp(microsecondsSinceEpoch: try cells.int64(24)),
                updatedAt: Timestamp(microsecondsSinceEpoch: try cells.int64(25)),
                version: try cells.int64(26)
            )
            return MarkerWithDetails(marker: marker, details: details)
        }
    }

    /// One row's cells, each read as the type its column holds.
    private struct Cells {
        let result: PGResult
        let row: Int

        func text(_ column: Int) throws -> String {
            guard let text = result.string(row, column) else {
                throw StoredRowError(column: column, problem: "is null")
            }
            return text
        }

        func id(_ column: Int) throws -> EntityID {
            guard let id = EntityID(try text(column)) else {
                throw StoredRowError(column: column, problem: "is not a UUID")
            }
            return id
        }

        func int64(_ column: Int) throws -> Int64 {
            guard result.bytes(row, column) != nil else { throw StoredRowError(column: column, problem: "is null") }
            guard let value = result.int64(row, column) else {
                throw StoredRowError(column: column, problem: "is not an integer")
            }
            return value
        }

        func double(_ column: Int) throws -> Double {
            guard let value = Double(try text(column)) else {
                throw StoredRowError(column: column, problem: "is not a number")
            }
            return value
        }

        func point(_ column: Int) throws -> Point3 {
            guard let bytes = result.bytes(row, column) else {
                throw StoredRowError(column: column, problem: "is null")
            }
            return try FieldReader.point(try JSONParser.parse(bytes), field: "column \(column)")
        }

        /// `meta` and `custom_props` are nearly always empty: no parse for `{}`.
        func object(_ column: Int) throws -> JSONObject {
            guard let bytes = result.bytes(row, column) else {
                throw StoredRowError(column: column, problem: "is null")
            }
            if bytes.count == 2, bytes[0] == UInt8(ascii: "{"), bytes[1] == UInt8(ascii: "}") { return [:] }
            guard case .object(let members) = try JSONParser.parse(bytes) else {
                throw StoredRowError(column: column, problem: "is not a JSON object")
            }
            return members
        }
    }
}

/// A projection row that does not hold what its column should: a bug or a hand edit,
/// never a client's mistake.
struct StoredRowError: Error, CustomStringConvertible {
    let column: Int
    let problem: String
    var description: String { "stored marker row: column \(column) \(problem)" }
}
