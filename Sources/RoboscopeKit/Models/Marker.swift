import Foundation
import RoboscopeGeometry

/// A marker: a quad of four corners in metres in the space's frame, with the details the
/// server computes from them (`details`, null when deleted by a client).
public struct Marker: Codable, Sendable, Hashable, Identifiable {
    public var id: UUID
    public var workSessionID: UUID
    public var label: String?
    public var p1: Point3
    public var p2: Point3
    public var p3: Point3
    public var p4: Point3
    /// `#RRGGBB`.
    public var color: String?
    public var version: Int64
    public var meta: [String: JSONValue]
    public var customProps: [String: JSONValue]
    public var calibratedData: CalibratedData?
    public var createdAt: Date
    public var updatedAt: Date
    public var details: MarkerDetails?

    /// A marker as the server answers it (for tests, previews and test doubles).
    public init(
        id: UUID, workSessionID: UUID, label: String?, p1: Point3, p2: Point3, p3: Point3, p4: Point3, color: String?,
        version: Int64, meta: [String: JSONValue], customProps: [String: JSONValue], calibratedData: CalibratedData?,
        createdAt: Date, updatedAt: Date, details: MarkerDetails?
    ) {
        self.id = id
        self.workSessionID = workSessionID
        self.label = label
        (self.p1, self.p2, self.p3, self.p4) = (p1, p2, p3, p4)
        self.color = color
        self.version = version
        self.meta = meta
        self.customProps = customProps
        self.calibratedData = calibratedData
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.details = details
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, label, p1, p2, p3, p4, color, version, meta, details
        case workSessionID = "work_session_id"
        case customProps = "custom_props"
        case calibratedData = "calibrated_data"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// The corners in order.
    public var corners: [Point3] { [p1, p2, p3, p4] }

    /// The details' eight figures as the server computes them, from the corners here and
    /// now (the same code: `RoboscopeGeometry`): what an optimistic local edit shows until
    /// the server's answer arrives.
    public var computedMeasurements: MarkerMeasurements { MarkerMeasurements(corners: corners) }

    /// The centre on the floor plan (x = cross, z = long).
    public var center: PlanePoint {
        let figures = computedMeasurements
        return PlanePoint(x: figures.centerLocationCross, z: figures.centerLocationLong)
    }
}

/// The details of a marker: the eight figures (`MarkerMeasurements`, flattened into the
/// object on the wire) and the client's `custom_props`.
public struct MarkerDetails: Codable, Sendable, Hashable {
    public var markerID: UUID
    public var measurements: MarkerMeasurements
    public var customProps: [String: JSONValue]
    public var createdAt: Date
    public var updatedAt: Date

    enum CodingKeys: String, CodingKey, CaseIterable {
        case markerID = "marker_id"
        case customProps = "custom_props"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// Details for a marker (for tests and optimistic local state).
    public init(
        markerID: UUID, measurements: MarkerMeasurements, customProps: [String: JSONValue] = [:],
        createdAt: Date, updatedAt: Date
    ) {
        self.markerID = markerID
        self.measurements = measurements
        self.customProps = customProps
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        markerID = try container.decode(UUID.self, forKey: .markerID)
        measurements = try MarkerMeasurements(from: decoder)
        customProps = try container.decode([String: JSONValue].self, forKey: .customProps)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        updatedAt = try container.decode(Date.self, forKey: .updatedAt)
    }

    public func encode(to encoder: any Encoder) throws {
        try measurements.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(markerID, forKey: .markerID)
        try container.encode(customProps, forKey: .customProps)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }
}

/// What creating a marker sends.
public struct NewMarker: Encodable, Sendable, Hashable {
    /// A client-chosen id: an offline device creates markers with stable ids.
    public var id: UUID?
    public var workSessionID: UUID
    public var label: String?
    public var p1: Point3
    public var p2: Point3
    public var p3: Point3
    public var p4: Point3
    public var color: String?
    public var meta: [String: JSONValue]?
    public var customProps: [String: JSONValue]?
    public var calibratedData: CalibratedData?

    /// A marker with four `corners` (in order: p1 to p4, metres in the space's frame);
    /// another number of corners throws `RoboscopeError.invalid(field: "corners")`.
    public init(
        id: UUID? = UUID(), workSessionID: UUID, label: String? = nil, corners: [Point3], color: String? = nil,
        meta: [String: JSONValue]? = nil, customProps: [String: JSONValue]? = nil, calibratedData: CalibratedData? = nil
    ) throws {
        try Self.checkFour(corners)
        self.init(
            id: id, workSessionID: workSessionID, label: label, p1: corners[0], p2: corners[1], p3: corners[2],
            p4: corners[3],
            color: color, meta: meta, customProps: customProps, calibratedData: calibratedData)
    }

    /// A marker with its four corners named.
    public init(
        id: UUID? = UUID(), workSessionID: UUID, label: String? = nil, p1: Point3, p2: Point3, p3: Point3, p4: Point3,
        color: String? = nil, meta: [String: JSONValue]? = nil, customProps: [String: JSONValue]? = nil,
        calibratedData: CalibratedData? = nil
    ) {
        self.id = id
        self.workSessionID = workSessionID
        self.label = label
        (self.p1, self.p2, self.p3, self.p4) = (p1, p2, p3, p4)
        self.color = color
        self.meta = meta
        self.customProps = customProps
        self.calibratedData = calibratedData
    }

    static func checkFour(_ corners: [Point3]) throws {
        guard corners.count == 4 else {
            throw RoboscopeError.invalid(
                field: "corners", message: "a marker has four corners (p1 to p4), not \(corners.count)")
        }
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, label, p1, p2, p3, p4, color, meta
        case workSessionID = "work_session_id"
        case customProps = "custom_props"
        case calibratedData = "calibrated_data"
    }
}

/// A change to a marker: only the fields set are sent. A double optional tells "leave
/// as is" (nil) from "clear" (`.some(nil)`).
public struct MarkerPatch: Codable, Sendable, Hashable {
    public var label: String??
    public var p1: Point3?
    public var p2: Point3?
    public var p3: Point3?
    public var p4: Point3?
    public var color: String??
    public var meta: [String: JSONValue]?
    public var customProps: [String: JSONValue]?
    public var calibratedData: CalibratedData??
    /// The version the change is based on: a different current version is a conflict.
    public var version: Int64?

    /// A change of the fields given; `label: .some(nil)` clears the label.
    public init(
        label: String?? = nil, color: String?? = nil, meta: [String: JSONValue]? = nil,
        customProps: [String: JSONValue]? = nil, calibratedData: CalibratedData?? = nil, version: Int64? = nil
    ) {
        self.label = label
        self.color = color
        self.meta = meta
        self.customProps = customProps
        self.calibratedData = calibratedData
        self.version = version
    }

    /// A change that moves the corners (and the fields given); other than four corners
    /// throw `RoboscopeError.invalid(field: "corners")`.
    public init(
        label: String?? = nil, corners: [Point3], color: String?? = nil, meta: [String: JSONValue]? = nil,
        customProps: [String: JSONValue]? = nil, calibratedData: CalibratedData?? = nil, version: Int64? = nil
    ) throws {
        try NewMarker.checkFour(corners)
        self.init(
            label: label, color: color, meta: meta, customProps: customProps, calibratedData: calibratedData,
            version: version)
        (p1, p2, p3, p4) = (corners[0], corners[1], corners[2], corners[3])
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case label, p1, p2, p3, p4, color, meta, version
        case customProps = "custom_props"
        case calibratedData = "calibrated_data"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        label = try container.decodeClearable(String.self, forKey: .label)
        p1 = try container.decodeIfPresent(Point3.self, forKey: .p1)
        p2 = try container.decodeIfPresent(Point3.self, forKey: .p2)
        p3 = try container.decodeIfPresent(Point3.self, forKey: .p3)
        p4 = try container.decodeIfPresent(Point3.self, forKey: .p4)
        color = try container.decodeClearable(String.self, forKey: .color)
        meta = try container.decodeIfPresent([String: JSONValue].self, forKey: .meta)
        customProps = try container.decodeIfPresent([String: JSONValue].self, forKey: .customProps)
        calibratedData = try container.decodeClearable(CalibratedData.self, forKey: .calibratedData)
        version = try container.decodeIfPresent(Int64.self, forKey: .version)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeClearable(label, forKey: .label)
        try container.encodeIfPresent(p1, forKey: .p1)
        try container.encodeIfPresent(p2, forKey: .p2)
        try container.encodeIfPresent(p3, forKey: .p3)
        try container.encodeIfPresent(p4, forKey: .p4)
        try container.encodeClearable(color, forKey: .color)
        try container.encodeIfPresent(meta, forKey: .meta)
        try container.encodeIfPresent(customProps, forKey: .customProps)
        try container.encodeClearable(calibratedData, forKey: .calibratedData)
        try container.encodeIfPresent(version, forKey: .version)
    }

    /// This change applied to `marker` as the server would apply it (optimistic updates).
    public func applied(to marker: Marker) -> Marker {
        var changed = marker
        if let label { changed.label = label }
        if let p1 { changed.p1 = p1 }
        if let p2 { changed.p2 = p2 }
        if let p3 { changed.p3 = p3 }
        if let p4 { changed.p4 = p4 }
        if let color { changed.color = color }
        if let meta { changed.meta = meta }
        if let customProps { changed.customProps = customProps }
        if let calibratedData { changed.calibratedData = calibratedData }
        if changed.corners != marker.corners, var details = changed.details {
            details.measurements = changed.computedMeasurements
            changed.details = details
        }
        return changed
    }
}

extension KeyedDecodingContainer {
    /// nil when the key is absent, `.some(nil)` for `null`.
    func decodeClearable<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T?? {
        guard contains(key) else { return nil }
        if try decodeNil(forKey: key) { return .some(nil) }
        return .some(try decode(T.self, forKey: key))
    }
}

extension KeyedEncodingContainer {
    /// Leaves the key out for nil, writes `null` for `.some(nil)`.
    mutating func encodeClearable<T: Encodable>(_ value: T??, forKey key: Key) throws {
        switch value {
        case .none: break
        case .some(.none): try encodeNil(forKey: key)
        case .some(.some(let inner)): try encode(inner, forKey: key)
        }
    }
}
