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

extension Marker: Decodable {
    enum CodingKeys: String, CodingKey {
        case id, label, p1, p2, p3, p4, color, version, meta
        case workSessionID = "work_session_id"
        case customProps = "custom_props"
        case calibratedData = "calibrated_data"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }
}

/// The shape clients receive wherever a marker is returned: the marker and its details.
public struct MarkerWithDetails: Hashable, Sendable {
    public var marker: Marker
    public var details: MarkerDetails?

    public init(marker: Marker, details: MarkerDetails?) {
        self.marker = marker
        self.details = details
    }
}

extension Marker: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writeFields(to: &$0) }
    }

    func writeFields(to writer: inout JSONWriter) {
        writer.key("id"); writer.value(id)
        writer.key("work_session_id"); writer.value(workSessionID)
        writer.key("label"); writer.value(label)
        writer.key("p1"); writer.value(p1)
        writer.key("p2"); writer.value(p2)
        writer.key("p3"); writer.value(p3)
        writer.key("p4"); writer.value(p4)
        writer.key("color"); writer.value(color)
        writer.key("version"); writer.value(version)
        writer.key("meta"); writer.value(JSONValue.object(meta))
        writer.key("custom_props"); writer.value(JSONValue.object(customProps))
        writer.key("calibrated_data"); writer.value(calibratedData)
        writer.key("created_at"); writer.value(createdAt)
        writer.key("updated_at"); writer.value(updatedAt)
    }
}

extension MarkerWithDetails: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            marker.writeFields(to: &writer)
            writer.key("details"); writer.value(details)
        }
    }
}

extension CalibratedData: JSONWritable {
    public func writeJSON(to writer: inout JSONWriter) {
        writer.object { writer in
            writer.key("p1"); writer.value(p1)
            writer.key("p2"); writer.value(p2)
            writer.key("p3"); writer.value(p3)
            writer.key("p4"); writer.value(p4)
            writer.key("center"); writer.value(center)
        }
    }
}
