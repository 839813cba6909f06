import RoboscopeDomain

/// Markers with their details, read column by column. Lists of hundreds of markers are
/// the service's largest reads: decoding each row from `to_jsonb` took most of such a
/// request, so the row's columns are read as they are (timestamps as microseconds,
/// figures as float8 text) and only the JSON columns are parsed.
enum MarkerRows {
    /// Every column the reads select, named: the decoder finds each by its name
    /// (`Layout`), never by its place in the list.
    static let columns = """
        m.id AS id, m.work_session_id AS work_session_id, m.label AS label, m.p1::text AS p1, m.p2::text AS p2,
        m.p3::text AS p3, m.p4::text AS p4, m.color AS color, m.version AS version, m.meta::text AS meta,
        m.custom_props::text AS custom_props, m.calibrated_data::text AS calibrated_data,
        (extract(epoch FROM m.created_at) * 1000000)::bigint AS created_at,
        (extract(epoch FROM m.updated_at) * 1000000)::bigint AS updated_at,
        d.marker_id AS details_marker_id, d.center_location_long AS center_location_long,
        d.center_location_cross AS center_location_cross, d.left_distance AS left_distance,
        d.right_distance AS right_distance, d.far_distance AS far_distance, d.near_distance AS near_distance,
        d.long_size AS long_size, d.cross_size AS cross_size, d.custom_props::text AS details_custom_props,
        (extract(epoch FROM d.created_at) * 1000000)::bigint AS details_created_at,
        (extract(epoch FROM d.updated_at) * 1000000)::bigint AS details_updated_at, d.version AS details_version
        """
    static let tables = "FROM markers m LEFT JOIN marker_details d ON d.marker_id = m.id"
    static let select = "SELECT \(columns) \(tables)"
    /// `select` and the marker's space (the row keeps its route): with its work session,
    /// the place a write to the marker locks.
    static let selectWithSpace = "SELECT \(columns), m.space_id AS space_id \(tables)"

    /// The work session's place of each row read with `selectWithSpace`.
    static func places(_ result: PGResult) throws -> [WorkSessionPlace] {
        let (session, space) = (try result.column("work_session_id"), try result.column("space_id"))
        return try (0..<result.rowCount).map { row in
            let cells = RowReader(result, row: row, source: "markers")
            return WorkSessionPlace(id: try cells.id(session), spaceID: try cells.id(space))
        }
    }

    /// Where each column is in a result: looked up by name once per result, not per row.
    private struct Layout {
        let id, workSessionID, label, p1, p2, p3, p4, color, version, meta, customProps, calibratedData: Int
        let createdAt, updatedAt: Int
        let detailsMarkerID, centerLocationLong, centerLocationCross, leftDistance, rightDistance: Int
        let farDistance, nearDistance, longSize, crossSize, detailsCustomProps: Int
        let detailsCreatedAt, detailsUpdatedAt, detailsVersion: Int

        init(_ result: PGResult) throws {
            let at = result.column
            (id, workSessionID, label) = (try at("id"), try at("work_session_id"), try at("label"))
            (p1, p2, p3, p4) = (try at("p1"), try at("p2"), try at("p3"), try at("p4"))
            (color, version, meta) = (try at("color"), try at("version"), try at("meta"))
            (customProps, calibratedData) = (try at("custom_props"), try at("calibrated_data"))
            (createdAt, updatedAt) = (try at("created_at"), try at("updated_at"))
            detailsMarkerID = try at("details_marker_id")
            (centerLocationLong, centerLocationCross) = (
                try at("center_location_long"), try at("center_location_cross")
            )
            (leftDistance, rightDistance) = (try at("left_distance"), try at("right_distance"))
            (farDistance, nearDistance) = (try at("far_distance"), try at("near_distance"))
            (longSize, crossSize) = (try at("long_size"), try at("cross_size"))
            detailsCustomProps = try at("details_custom_props")
            (detailsCreatedAt, detailsUpdatedAt) = (try at("details_created_at"), try at("details_updated_at"))
            detailsVersion = try at("details_version")
        }
    }

    static func decode(_ result: PGResult) throws -> [MarkerWithDetails] {
        let at = try Layout(result)
        return try (0..<result.rowCount).map { row in
            let cells = RowReader(result, row: row, source: "markers")
            let marker = Marker(
                id: try cells.id(at.id), workSessionID: try cells.id(at.workSessionID),
                label: result.string(row, at.label),
                p1: try cells.point(at.p1), p2: try cells.point(at.p2), p3: try cells.point(at.p3),
                p4: try cells.point(at.p4), color: result.string(row, at.color), version: try cells.int64(at.version),
                meta: try cells.object(at.meta), customProps: try cells.object(at.customProps),
                calibratedData: try result.bytes(row, at.calibratedData).map {
                    try JSONValueDecoder().decode(CalibratedData.self, from: $0)
                },
                createdAt: Timestamp(microsecondsSinceEpoch: try cells.int64(at.createdAt)),
                updatedAt: Timestamp(microsecondsSinceEpoch: try cells.int64(at.updatedAt))
            )
            guard result.bytes(row, at.detailsMarkerID) != nil else {
                return MarkerWithDetails(marker: marker, details: nil)
            }
            let details = MarkerDetails(
                markerID: try cells.id(at.detailsMarkerID),
                measurements: MarkerMeasurements(
                    centerLocationLong: try cells.double(at.centerLocationLong),
                    centerLocationCross: try cells.double(at.centerLocationCross),
                    leftDistance: try cells.double(at.leftDistance), rightDistance: try cells.double(at.rightDistance),
                    farDistance: try cells.double(at.farDistance), nearDistance: try cells.double(at.nearDistance),
                    longSize: try cells.double(at.longSize), crossSize: try cells.double(at.crossSize)
                ),
                customProps: try cells.object(at.detailsCustomProps),
                createdAt: Timestamp(microsecondsSinceEpoch: try cells.int64(at.detailsCreatedAt)),
                updatedAt: Timestamp(microsecondsSinceEpoch: try cells.int64(at.detailsUpdatedAt)),
                version: try cells.int64(at.detailsVersion)
            )
            return MarkerWithDetails(marker: marker, details: details)
        }
    }
}

extension RowReader {
    /// A float8 cell (read as its text).
    func double(_ column: Int) throws -> Double {
        guard let value = Double(try text(column)) else { throw corrupt(column, "is not a number") }
        return value
    }

    /// A point stored as its JSON array.
    func point(_ column: Int) throws -> Point3 {
        try FieldReader.point(try JSONParser.parse(try borrowedBytes(column)), field: "column \(column)")
    }

    /// A JSON object; `meta` and `custom_props` are nearly always empty: no parse for `{}`.
    func object(_ column: Int) throws -> JSONObject {
        let bytes = try borrowedBytes(column)
        if bytes.count == 2, bytes[0] == UInt8(ascii: "{"), bytes[1] == UInt8(ascii: "}") { return [:] }
        guard case .object(let members) = try JSONParser.parse(bytes) else {
            throw corrupt(column, "is not a JSON object")
        }
        return members
    }
}
