import Testing
import RoboscopeGeometry

@Suite struct MarkerMeasurementsTests {
    @Test func axisAlignedQuad() {
        // x from 1 to 3 (cross), z from 10 to 14 (long), y is ignored.
        let measurements = MarkerMeasurements(corners: [
            Point3(x: 1, y: 0, z: 10), Point3(x: 3, y: 5, z: 10), Point3(x: 3, y: 0, z: 14), Point3(x: 1, y: -2, z: 14),
        ])
        #expect(measurements.centerLocationLong == 12)
        #expect(measurements.centerLocationCross == 2)
        #expect(measurements.nearDistance == 10)
        #expect(measurements.farDistance == 14)
        #expect(measurements.leftDistance == 1)
        #expect(measurements.rightDistance == 3)
        #expect(measurements.longSize == 4)
        #expect(measurements.crossSize == 2)
    }

    @Test func skewedQuadAcrossTheCenterline() {
        let measurements = MarkerMeasurements(corners: [
            Point3(x: -0.5, y: 0, z: 0.25), Point3(x: 0.75, y: 0, z: 0.5), Point3(x: 1.0, y: 0, z: 1.75),
            Point3(x: -0.25, y: 0, z: 1.5),
        ])
        #expect(measurements.centerLocationLong == (0.25 + 0.5 + 1.75 + 1.5) / 4)
        #expect(measurements.centerLocationCross == (-0.5 + 0.75 + 1.0 - 0.25) / 4)
        #expect(measurements.leftDistance == -0.5)
        #expect(measurements.rightDistance == 1.0)
        #expect(measurements.nearDistance == 0.25)
        #expect(measurements.farDistance == 1.75)
        #expect(measurements.longSize == 1.5)
        #expect(measurements.crossSize == 1.5)
    }

    @Test func fieldNamesMatchTheWireContract() {
        #expect(
            MarkerMeasurements.fieldNames == [
                "center_location_long", "center_location_cross", "left_distance", "right_distance",
                "far_distance", "near_distance", "long_size", "cross_size",
            ])
        var measurements = MarkerMeasurements(corners: [Point3(x: 0, y: 0, z: 0)])
        measurements[fieldName: "long_size"] = 7
        #expect(measurements.longSize == 7)
    }
}
