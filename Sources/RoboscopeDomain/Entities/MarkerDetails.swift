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

extension MarkerDetails: Codable {
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

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(markerID, forKey: .markerID)
        try measurements.encode(to: encoder)
        try container.encode(customProps, forKey: .customProps)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}
