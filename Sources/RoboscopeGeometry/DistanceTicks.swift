/// A point on a plane (a floor plan: x = cross axis, z = long axis; or a map projected
/// to metres).
public struct PlanePoint: Hashable, Sendable, Codable {
    public var x: Double
    public var z: Double

    /// The point (x, z), in metres.
    public init(x: Double, z: Double) {
        self.x = x
        self.z = z
    }

    /// The straight-line distance to `other`.
    public func distance(to other: PlanePoint) -> Double {
        ((other.x - x) * (other.x - x) + (other.z - z) * (other.z - z)).squareRoot()
    }

    /// The point `fraction` (0 to 1) of the way to `other`.
    public func interpolated(to other: PlanePoint, fraction: Double) -> PlanePoint {
        PlanePoint(x: x + (other.x - x) * fraction, z: z + (other.z - z) * fraction)
    }
}

/// Distance marks along a path, as route views draw them: the cumulative distance at
/// each vertex, a tick at every exact multiple of an interval (placed inside its
/// segment by linear interpolation), the interval chosen from the zoom, and the start
/// and the end always present. Distances are in the path's own unit (metres on a floor
/// plan).
public enum DistanceTicks {
    /// One mark on the path.
    public struct Tick: Hashable, Sendable {
        /// Where on the path a tick is.
        public enum Kind: Hashable, Sendable {
            case start
            /// At a multiple of the interval.
            case interval
            case end
        }

        public var kind: Kind
        /// The distance along the path from its start.
        public var distance: Double
        public var point: PlanePoint
        /// The index of the segment it lies in (from vertex `segment` to `segment + 1`).
        public var segment: Int
    }

    /// A row of a zoom table: from `minimumZoom` up, ticks every `interval` (nil: only
    /// the start and the end).
    public struct ZoomStep: Hashable, Sendable {
        public var minimumZoom: Double
        public var interval: Double?

        /// From `minimumZoom` up, ticks every `interval` (nil: start and end only).
        public init(minimumZoom: Double, interval: Double?) {
            self.minimumZoom = minimumZoom
            self.interval = interval
        }
    }

    /// zoom ≥ 16: 1, ≥ 15: 2, ≥ 14: 5, ≥ 11: 10, ≥ 9: 20, ≥ 7: 30, ≥ 5: 50, below: start and end only.
    public static let defaultZoomTable: [ZoomStep] = [
        ZoomStep(minimumZoom: 16, interval: 1), ZoomStep(minimumZoom: 15, interval: 2),
        ZoomStep(minimumZoom: 14, interval: 5),
        ZoomStep(minimumZoom: 11, interval: 10), ZoomStep(minimumZoom: 9, interval: 20),
        ZoomStep(minimumZoom: 7, interval: 30),
        ZoomStep(minimumZoom: 5, interval: 50),
    ]

    /// The interval for `zoom`: the row with the highest minimum the zoom reaches (the
    /// table in any order); nil below every row.
    public static func interval(forZoom zoom: Double, table: [ZoomStep] = defaultZoomTable) -> Double? {
        table.filter { zoom >= $0.minimumZoom }.max { $0.minimumZoom < $1.minimumZoom }?.interval
    }

    /// The distance from the start to each vertex (0 first; as many as there are points).
    public static func cumulativeDistances(_ path: [PlanePoint]) -> [Double] {
        var distances: [Double] = []
        distances.reserveCapacity(path.count)
        var total = 0.0
        for (index, point) in path.enumerated() {
            if index > 0 { total += path[index - 1].distance(to: point) }
            distances.append(total)
        }
        return distances
    }

    /// The ticks along `path` every `interval` (nil or not positive: start and end
    /// only), in order. A multiple that falls on the end is the end tick, not a second one;
    /// a path of one point has a start and an end at that point; an empty path none.
    public static func ticks(along path: [PlanePoint], every interval: Double?) -> [Tick] {
        guard let first = path.first, let last = path.last else { return [] }
        let cumulative = cumulativeDistances(path)
        let length = cumulative.last ?? 0
        var ticks = [Tick(kind: .start, distance: 0, point: first, segment: 0)]
        if let interval, interval > 0, interval.isFinite {
            var segment = 0
            var multiple = 1.0
            // Multiples are computed as n * interval, never by adding up, so no rounding drift.
            while multiple * interval < length {
                let distance = multiple * interval
                while cumulative[segment + 1] < distance { segment += 1 }
                let start = cumulative[segment]
                let span = cumulative[segment + 1] - start
                let fraction = span > 0 ? (distance - start) / span : 0
                ticks.append(
                    Tick(
                        kind: .interval, distance: distance,
                        point: path[segment].interpolated(to: path[segment + 1], fraction: fraction), segment: segment))
                multiple += 1
            }
        }
        ticks.append(Tick(kind: .end, distance: length, point: last, segment: max(0, path.count - 2)))
        return ticks
    }

    /// The ticks for the interval `zoom` selects from `table`.
    public static func ticks(along path: [PlanePoint], zoom: Double, table: [ZoomStep] = defaultZoomTable) -> [Tick] {
        ticks(along: path, every: interval(forZoom: zoom, table: table))
    }
}
