/// Measurements the server derives from a marker's four corners, in meters.
public struct MarkerDetails: Hashable, Sendable {
    public var markerID: EntityID
    public var measurements: MarkerMeasurements
    public var customProps: JSONObject
    public var createdAt: Timestamp
    public var updatedAt: Timestamp
    /// The details stream's version: a concurrency token kept by the projection,
    /// neither sent to clients nor stored in event data.
    public var version: Int64

    public init(
        markerID: EntityID, measurements: MarkerMeasurements, customProps: JSONObject,
        createdAt: Timestamp, updatedAt: Timestamp, version: Int64 = 0
    ) {
        self.markerID = markerID
        self.measurements = measurements
        self.customProps = customProps
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
    }
}

extension MarkerDetails: Decodable {
    enum CodingKeys: String, CodingKey {
        case markerID = "marker_id"
        case customProps = "custom_props"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case version
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        markerID = try container.decode(EntityID.self, forKey: .markerID)
        customProps = try container.decode(JSONObject.self, forKey: .customProps)
        createdAt = try container.decode(Timestamp.self, forKey: .createdAt)
        updatedAt = try container.decode(Timestamp.self, forKey: .updatedAt)
        version = try container.decodeIfPresent(Int64.self, forKey: .version) ?? 0
        measurements = try MarkerMeasurements(from: decoder)
    }
}

extension MarkerDetails: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("marker_id"); writer.value(markerID)
            writer.key("center_location_long"); writer.value(measurements.centerLocationLong)
            writer.key("center_location_cross"); writer.value(measurements.centerLocationCross)
            writer.key("left_distance"); writer.value(measurements.leftDistance)
            writer.key("right_distance"); writer.value(measurements.rightDistance)
            writer.key("far_distance"); writer.value(measurements.farDistance)
            writer.key("near_distance"); writer.value(measurements.nearDistance)
            writer.key("long_size"); writer.value(measurements.longSize)
            writer.key("cross_size"); writer.value(measurements.crossSize)
            writer.key("custom_props"); writer.value(JSONValue.object(customProps))
            writer.key("created_at"); writer.value(createdAt)
            writer.key("updated_at"); writer.value(updatedAt)
        }
    }
}
