/// An AR marker: a quad of four corner points placed during a work session.
public struct Marker: Hashable, Sendable {
    public var id: EntityID
    public var workSessionID: EntityID
    public var label: String?
    public var p1: Point3
    public var p2: Point3
    public var p3: Point3
    public var p4: Point3
    public var color: String?
    public var version: Int64
    public var meta: JSONObject
    public var customProps: JSONObject
    public var calibratedData: CalibratedData?
    public var createdAt: Timestamp
    public var updatedAt: Timestamp

    public init(
        id: EntityID, workSessionID: EntityID, label: String?, p1: Point3, p2: Point3, p3: Point3,
        p4: Point3, color: String?, version: Int64, meta: JSONObject, customProps: JSONObject,
        calibratedData: CalibratedData?, createdAt: Timestamp, updatedAt: Timestamp
    ) {
        self.id = id
        self.workSessionID = workSessionID
        self.label = label
        self.p1 = p1
        self.p2 = p2
        self.p3 = p3
        self.p4 = p4
        self.color = color
        self.version = version
        self.meta = meta
        self.customProps = customProps
        self.calibratedData = calibratedData
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    public var corners: [Point3] { [p1, p2, p3, p4] }
}

/// Calibrated corner points and center, stored exactly as the client sent them.
public struct CalibratedData: Hashable, Sendable, Codable {
    public var p1: Point3
    public var p2: Point3
    public var p3: Point3
    public var p4: Point3
    public var center: Point3

    public init(p1: Point3, p2: Point3, p3: Point3, p4: Point3, center: Point3) {
        self.p1 = p1
        self.p2 = p2
        self.p3 = p3
        self.p4 = p4
        self.center = center
    }
}

extension Marker: Codable {
    enum CodingKeys: String, CodingKey {
        case id, label, p1, p2, p3, p4, color, version, meta
        case workSessionID = "work_session_id"
        case customProps = "custom_props"
        case calibratedData = "calibrated_data"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try encodeFields(into: &container)
    }

    func encodeFields(into container: inout KeyedEncodingContainer<CodingKeys>) throws {
        try container.encode(id, forKey: .id)
        try container.encode(workSessionID, forKey: .workSessionID)
        try container.encode(label, forKey: .label)
        try container.encode(p1, forKey: .p1)
        try container.encode(p2, forKey: .p2)
        try container.encode(p3, forKey: .p3)
        try container.encode(p4, forKey: .p4)
        try container.encode(color, forKey: .color)
        try container.encode(version, forKey: .version)
        try container.encode(meta, forKey: .meta)
        try container.encode(customProps, forKey: .customProps)
        try container.encode(calibratedData, forKey: .calibratedData)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}

/// The shape clients receive wherever a marker is returned: the marker and its details.
public struct MarkerWithDetails: Hashable, Sendable, Encodable {
    public var marker: Marker
    public var details: MarkerDetails?

    public init(marker: Marker, details: MarkerDetails?) {
        self.marker = marker
        self.details = details
    }

    enum DetailsKey: String, CodingKey { case details }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Marker.CodingKeys.self)
        try marker.encodeFields(into: &container)
        var detailsContainer = encoder.container(keyedBy: DetailsKey.self)
        try detailsContainer.encode(details, forKey: .details)
    }
}
