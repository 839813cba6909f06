/// Corner points and centre as a calibration gave them, stored by the service exactly as
/// the client sent them: the server and the kit share this one declaration.
public struct CalibratedData: Codable, Sendable, Hashable {
    public var p1: Point3
    public var p2: Point3
    public var p3: Point3
    public var p4: Point3
    public var center: Point3

    /// Calibrated corners and centre, stored by the service as given.
    public init(p1: Point3, p2: Point3, p3: Point3, p4: Point3, center: Point3) {
        self.p1 = p1
        self.p2 = p2
        self.p3 = p3
        self.p4 = p4
        self.center = center
    }
}
