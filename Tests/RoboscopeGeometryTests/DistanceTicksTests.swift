import Testing
import RoboscopeGeometry

/// Distance ticks on paths worked out by hand.
@Suite struct DistanceTicksTests {
    /// An L: 3 east, then 4 north; 7 long.
    let ell = [PlanePoint(x: 0, z: 0), PlanePoint(x: 3, z: 0), PlanePoint(x: 3, z: 4)]

    @Test func cumulativeDistancesAtEachVertex() {
        #expect(DistanceTicks.cumulativeDistances(ell) == [0, 3, 7])
        // A 3-4-5 triangle's hypotenuse.
        #expect(DistanceTicks.cumulativeDistances([PlanePoint(x: 0, z: 0), PlanePoint(x: 3, z: 4)]) == [0, 5])
        #expect(DistanceTicks.cumulativeDistances([]) == [])
    }

    @Test func ticksAtExactMultiplesInsideTheirSegments() {
        let ticks = DistanceTicks.ticks(along: ell, every: 2)
        #expect(ticks.map(\.distance) == [0, 2, 4, 6, 7])
        #expect(ticks.map(\.kind) == [.start, .interval, .interval, .interval, .end])
        #expect(ticks[1].point == PlanePoint(x: 2, z: 0))
        #expect(ticks[1].segment == 0)
        // 4 is 1 past the corner at 3: one metre up the second leg.
        #expect(ticks[2].point == PlanePoint(x: 3, z: 1))
        #expect(ticks[2].segment == 1)
        #expect(ticks[3].point == PlanePoint(x: 3, z: 3))
        #expect(ticks[4].point == PlanePoint(x: 3, z: 4))
    }

    @Test func aMultipleOnTheEndIsTheEndTick() {
        let ticks = DistanceTicks.ticks(along: [PlanePoint(x: 0, z: 0), PlanePoint(x: 0, z: 10)], every: 5)
        #expect(ticks.map(\.distance) == [0, 5, 10])
        #expect(ticks.last?.kind == .end)
    }

    @Test func aDiagonalIsInterpolated() {
        let ticks = DistanceTicks.ticks(along: [PlanePoint(x: 0, z: 0), PlanePoint(x: 6, z: 8)], every: 5)
        #expect(ticks.map(\.distance) == [0, 5, 10])
        #expect(ticks[1].point == PlanePoint(x: 3, z: 4))
    }

    @Test func repeatedPointsAndLongPathsKeepExactMultiples() {
        let path = [PlanePoint(x: 0, z: 0), PlanePoint(x: 0, z: 0), PlanePoint(x: 0, z: 1000.5)]
        let ticks = DistanceTicks.ticks(along: path, every: 0.1)
        #expect(ticks.count == 10_006)
        #expect(ticks[7_000].distance == 7_000 * 0.1)
        #expect(ticks.dropFirst().dropLast().allSatisfy { $0.segment == 1 })
    }

    @Test func theZoomPicksTheInterval() {
        let cases: [(Double, Double?)] = [
            (18, 1), (16, 1), (15.5, 2), (15, 2), (14, 5), (12, 10), (11, 10), (10, 20), (9, 20),
            (8, 30), (7, 30), (6, 50), (5, 50), (4.9, nil), (0, nil),
        ]
        for (zoom, interval) in cases {
            #expect(DistanceTicks.interval(forZoom: zoom) == interval, "zoom \(zoom)")
        }
        // Below the table: the start and the end only.
        #expect(DistanceTicks.ticks(along: ell, zoom: 3).map(\.kind) == [.start, .end])
        #expect(DistanceTicks.ticks(along: ell, zoom: 16).count == 8)
        // A table of one's own, in any order.
        let table = [
            DistanceTicks.ZoomStep(minimumZoom: 0, interval: 3.5),
            DistanceTicks.ZoomStep(minimumZoom: 10, interval: nil),
        ]
        #expect(DistanceTicks.ticks(along: ell, zoom: 2, table: table).map(\.distance) == [0, 3.5, 7])
        #expect(DistanceTicks.ticks(along: ell, zoom: 12, table: table).count == 2)
    }

    @Test func degeneratePaths() {
        #expect(DistanceTicks.ticks(along: [], every: 1).isEmpty)
        let single = DistanceTicks.ticks(along: [PlanePoint(x: 1, z: 2)], every: 1)
        #expect(single.map(\.kind) == [.start, .end])
        #expect(single.allSatisfy { $0.distance == 0 && $0.point == PlanePoint(x: 1, z: 2) })
        #expect(DistanceTicks.ticks(along: ell, every: 0).count == 2)
        #expect(DistanceTicks.ticks(along: ell, every: -1).count == 2)
    }
}
