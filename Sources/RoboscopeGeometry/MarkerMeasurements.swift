/// The eight figures of a marker's details, in the space frame
/// (x = cross axis, z = long axis, y = up).
public struct MarkerMeasurements: Hashable, Sendable, Codable {
    public var centerLocationLong: Double
    public var centerLocationCross: Double
    public var leftDistance: Double
    public var rightDistance: Double
    public var farDistance: Double
    public var nearDistance: Double
    public var longSize: Double
    public var crossSize: Double

    /// The eight figures' wire names.
    public enum CodingKeys: String, CodingKey, CaseIterable {
        case centerLocationLong = "center_location_long"
        case centerLocationCross = "center_location_cross"
        case leftDistance = "left_distance"
        case rightDistance = "right_distance"
        case farDistance = "far_distance"
        case nearDistance = "near_distance"
        case longSize = "long_size"
        case crossSize = "cross_size"
    }

    /// The wire names of the eight figures, in order.
    public static let fieldNames: [String] = CodingKeys.allCases.map(\.rawValue)

    /// The eight figures as given (a client's `PUT` may override the computed ones).
    public init(
        centerLocationLong: Double, centerLocationCross: Double, leftDistance: Double,
        rightDistance: Double, farDistance: Double, nearDistance: Double, longSize: Double,
        crossSize: Double
    ) {
        self.centerLocationLong = centerLocationLong
        self.centerLocationCross = centerLocationCross
        self.leftDistance = leftDistance
        self.rightDistance = rightDistance
        self.farDistance = farDistance
        self.nearDistance = nearDistance
        self.longSize = longSize
        self.crossSize = crossSize
    }

    /// Computes the figures from four corners: centers are means, distances are the
    /// extremes measured from the z = 0 plane and the x = 0 centerline, sizes the spans.
    public init(corners: [Point3]) {
        precondition(!corners.isEmpty, "a marker has corners")
        let xs = corners.map(\.x)
        let zs = corners.map(\.z)
        let count = Double(corners.count)
        let minX = xs.min()!
        let maxX = xs.max()!
        let minZ = zs.min()!
        let maxZ = zs.max()!
        self.init(
            centerLocationLong: zs.reduce(0, +) / count,
            centerLocationCross: xs.reduce(0, +) / count,
            leftDistance: minX,
            rightDistance: maxX,
            farDistance: maxZ,
            nearDistance: minZ,
            longSize: maxZ - minZ,
            crossSize: maxX - minX
        )
    }

    public subscript(fieldName name: String) -> Double? {
        get {
            switch name {
            case CodingKeys.centerLocationLong.rawValue: return centerLocationLong
            case CodingKeys.centerLocationCross.rawValue: return centerLocationCross
            case CodingKeys.leftDistance.rawValue: return leftDistance
            case CodingKeys.rightDistance.rawValue: return rightDistance
            case CodingKeys.farDistance.rawValue: return farDistance
            case CodingKeys.nearDistance.rawValue: return nearDistance
            case CodingKeys.longSize.rawValue: return longSize
            case CodingKeys.crossSize.rawValue: return crossSize
            default: return nil
            }
        }
        set {
            guard let newValue else { return }
            switch name {
            case CodingKeys.centerLocationLong.rawValue: centerLocationLong = newValue
            case CodingKeys.centerLocationCross.rawValue: centerLocationCross = newValue
            case CodingKeys.leftDistance.rawValue: leftDistance = newValue
            case CodingKeys.rightDistance.rawValue: rightDistance = newValue
            case CodingKeys.farDistance.rawValue: farDistance = newValue
            case CodingKeys.nearDistance.rawValue: nearDistance = newValue
            case CodingKeys.longSize.rawValue: longSize = newValue
            case CodingKeys.crossSize.rawValue: crossSize = newValue
            default: break
            }
        }
    }
}
