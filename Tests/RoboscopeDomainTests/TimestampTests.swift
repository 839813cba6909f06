import Testing
@testable import RoboscopeDomain

@Suite struct TimestampTests {
    @Test func wireFormIsWholeSecondsUTC() {
        let time = Timestamp(rfc3339: "2026-11-22T01:24:59.987654Z")!
        #expect(time.formatted(.wire) == "2026-11-22T01:24:59Z")
        #expect(time.formatted(.storage) == "2026-11-22T01:24:59.987654Z")
    }

    @Test func acceptsOffsetsAndFractions() {
        let utc = Timestamp(rfc3339: "2026-11-22T01:24:59Z")!
        #expect(Timestamp(rfc3339: "2026-11-22T02:24:59+01:00") == utc)
        #expect(Timestamp(rfc3339: "2026-11-21T20:54:59-04:30") == utc)
        #expect(
            Timestamp(rfc3339: "2026-11-22 01:24:59.5+00:00")!.microsecondsSinceEpoch == utc.microsecondsSinceEpoch
                + 500_000)
        #expect(
            Timestamp(rfc3339: "2026-11-22t01:24:59.123456789z")!.microsecondsSinceEpoch == utc.microsecondsSinceEpoch
                + 123_456)
    }

    @Test func knownEpochValues() {
        #expect(Timestamp(rfc3339: "1970-01-01T00:00:00Z")!.microsecondsSinceEpoch == 0)
        #expect(Timestamp(rfc3339: "2000-02-29T00:00:00Z")!.microsecondsSinceEpoch == 951_782_400_000_000)
        #expect(Timestamp(microsecondsSinceEpoch: -1).formatted(.storage) == "1969-12-31T23:59:59.999999Z")
    }

    @Test(arguments: [
        "", "2026-11-22", "2026-11-22T01:24:59", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
        "2026-11-22T25:00:00Z", "2026-11-22T01:24:59.Z", "2026-11-22T01:24:59+0100", "2026-11-22T01:24:59Zjunk",
    ])
    func rejectsMalformed(_ text: String) {
        #expect(Timestamp(rfc3339: text) == nil)
    }

    @Test func roundTripsThroughStorageForm() {
        for micros: Int64 in [0, 1, 999_999, 1_795_000_000_123_456, 4_102_444_800_000_000] {
            let time = Timestamp(microsecondsSinceEpoch: micros)
            #expect(Timestamp(rfc3339: time.formatted(.storage)) == time)
        }
    }

    @Test func formatsEveryFieldAtItsWidth() {
        #expect(Timestamp(microsecondsSinceEpoch: 0).formatted(.wire) == "1970-01-01T00:00:00Z")
        #expect(Timestamp(rfc3339: "0009-03-04T05:06:07.000008Z")!.formatted(.storage) == "0009-03-04T05:06:07.000008Z")
        #expect(Timestamp(rfc3339: "9999-12-31T23:59:59.999999Z")!.formatted(.storage) == "9999-12-31T23:59:59.999999Z")
        // Past four digits the year grows rather than being cut.
        #expect(Timestamp(microsecondsSinceEpoch: 253_402_300_800_000_000).formatted(.wire) == "10000-01-01T00:00:00Z")
        var bytes = Array("x".utf8)
        Timestamp(rfc3339: "2026-11-22T01:24:59.5Z")!.write(.wire, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "x2026-11-22T01:24:59Z")
    }
}

@Test func completionComparesWithTheStartAtWholeSeconds() throws {
    // Started at …03:24:59.123+02:00, which clients see as 01:24:59Z.
    let started = try #require(Timestamp(rfc3339: "2026-11-22T03:24:59.123+02:00"))
    #expect(started.formatted(.wire) == "2026-11-22T01:24:59Z")
    let session = WorkSession(
        id: .random(), spaceID: .random(), sessionType: .inspection, status: .active, startedAt: started,
        completedAt: nil,
        version: 1, meta: [:], createdAt: started, updatedAt: started
    )
    let context = CommandContext(now: started, provenance: Provenance(actor: "t", requestID: "r"))
    let done = try WorkSessionCommands.update(
        session, FieldReader(["completed_at": .string("2026-11-22T01:24:59Z")]), expectedVersion: nil, context)
    #expect(done.0.completedAt?.formatted(.wire) == "2026-11-22T01:24:59Z")
    // A whole second before is refused, naming both values as the client sees them.
    #expect {
        try WorkSessionCommands.update(
            session, FieldReader(["completed_at": .string("2026-11-22T01:24:58Z")]), expectedVersion: nil, context)
    } throws: { error in
        let error = error as? DomainError
        return error?.field == "completed_at" && error?.message.contains("2026-11-22T01:24:58Z") == true
            && error?.message.contains("started_at 2026-11-22T01:24:59Z") == true
    }
}

/// RFC 3339 allows year 0000; Postgres has no year zero (a 500 until refused here).
@Test func yearZeroIsNoTime() {
    #expect(Timestamp(rfc3339: "0000-01-01T00:12:01Z") == nil)
    #expect(Timestamp(rfc3339: "0001-01-01T00:00:00Z") != nil)
}
