/// A point in a space's frame, in meters: x is the cross axis, y is up, z is the long axis.
/// On the wire it is the array `[x, y, z]`.
public struct Point3: Hashable, Sendable {
    public var x: Double
    public var y: Double
    public var z: Double

    /// The point (x, y, z), in metres.
    public init(x: Double, y: Double, z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }
}

extension Point3: Codable {
    public init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        x = try container.decode(Double.self)
        y = try container.decode(Double.self)
        z = try container.decode(Double.self)
        guard container.isAtEnd else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "a point has three coordinates")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(x)
        try container.encode(y)
        try container.encode(z)
    }
}
