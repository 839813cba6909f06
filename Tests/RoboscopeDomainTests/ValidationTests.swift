import Foundation
import Testing
@testable import RoboscopeDomain

@Suite struct ValidationTests {
    let context = CommandContext(
        now: Timestamp(microsecondsSinceEpoch: 1_795_000_000_000_000),
        provenance: Provenance(actor: "tester", requestID: "r1"))
    let session = WorkSession(
        id: EntityID("11111111-1111-4111-8111-111111111111")!,
        spaceID: EntityID("22222222-2222-4222-8222-222222222222")!,
        sessionType: .inspection, status: .draft, startedAt: Timestamp(microsecondsSinceEpoch: 0), completedAt: nil,
        version: 1, meta: [:], createdAt: Timestamp(microsecondsSinceEpoch: 0),
        updatedAt: Timestamp(microsecondsSinceEpoch: 0)
    )

    func body(_ json: String) throws -> FieldReader {
        try FieldReader(body: JSONDecoder().decode(JSONValue.self, from: Data(json.utf8)))
    }

    func field(of error: any Error) -> String? { (error as? DomainError)?.field }

    let quad = #""p1":[0,0,0],"p2":[1,0,0],"p3":[1,0,1],"p4":[0,0,1]"#

    @Test func markerCreateComputesDetailsInTheSameBatch() throws {
        let (created, batch) = try MarkerCommands.create(
            body("{\(quad),\"label\":\"crack\"}"), session: session.place, context)
        #expect(batch.events.map(\.type) == [.markerCreated, .markerDetailsCalculated])
        #expect(created.details?.measurements.crossSize == 1)
        #expect(batch.events[1].metadata.causationID == batch.events[0].eventID)
        #expect(batch.requiredStreams == [StreamRef(.workSession, session.id)])
    }

    @Test(arguments: [
        (#""p1":[0,0],"p2":[1,0,0],"p3":[1,0,1],"p4":[0,0,1]"#, "p1"),
        (#""p1":[0,0,0],"p2":[1,0,"x"],"p3":[1,0,1],"p4":[0,0,1]"#, "p2"),
        (#""p1":[0,0,0],"p2":[1,0,0],"p3":[1,0,1,2],"p4":[0,0,1]"#, "p3"),
        (#""p1":[0,0,0],"p2":[1,0,0],"p3":[1,0,1]"#, "p4"),
    ])
    func badPointsNameTheField(_ points: String, _ expected: String) throws {
        #expect(throws: DomainError.self) {
            try MarkerCommands.create(body("{\(points)}"), session: session.place, context)
        }
        do {
            _ = try MarkerCommands.create(body("{\(points)}"), session: session.place, context)
        } catch {
            #expect(field(of: error) == expected)
        }
    }

    @Test(arguments: [
        (#""color":"red""#, "color"), (##""color":"#12345G""##, "color"), (#""label":5"#, "label"),
        (#""meta":[]"#, "meta"), (#""custom_props":"x""#, "custom_props"), (#""id":"nope""#, "id"),
        (#""calibrated_data":{"p1":[0,0,0]}"#, "calibrated_data.p2"),
    ])
    func badMarkerFieldsNameTheField(_ extra: String, _ expected: String) throws {
        do {
            _ = try MarkerCommands.create(body("{\(quad),\(extra)}"), session: session.place, context)
            Issue.record("expected a validation error for \(extra)")
        } catch {
            #expect(field(of: error) == expected)
        }
    }

    @Test func overLongLabelIsRefused() throws {
        let label = String(repeating: "a", count: Limits.labelLength + 1)
        #expect(throws: DomainError.self) {
            try MarkerCommands.create(body("{\(quad),\"label\":\"\(label)\"}"), session: session.place, context)
        }
    }

    @Test func bulkNamesTheFailingIndex() throws {
        let good = "{\(quad)}"
        let bad = #"{"p1":[0,0,0],"p2":[1,0,0],"p3":[1,0,1],"p4":[0,0,"nan"]}"#
        let items = try JSONDecoder().decode([JSONValue].self, from: Data("[\(good),\(good),\(bad)]".utf8))
        do {
            _ = try MarkerCommands.bulkCreate(items, session: session.place, context)
            Issue.record("expected a validation error")
        } catch let error as DomainError {
            #expect(error.field == "markers[2].p4")
            #expect(error.details["index"] == .integer(2))
        }
    }

    @Test func updateKeepsDetailsCustomPropsWhenPointsMove() throws {
        let (created, _) = try MarkerCommands.create(body("{\(quad)}"), session: session.place, context)
        var current = created
        current.details?.customProps = ["note": .string("keep me")]
        let (updated, batch) = try MarkerCommands.update(
            current, session: session.place, body(#"{"p3":[2,0,3]}"#), expectedVersion: nil, context
        )
        #expect(updated.marker.version == 2)
        #expect(updated.details?.customProps == ["note": .string("keep me")])
        #expect(updated.details?.measurements.farDistance == 3)
        #expect(batch.events.map(\.type) == [.markerUpdated, .markerDetailsCalculated])
    }

    @Test func updateWithoutPointChangesDoesNotRecalculate() throws {
        let (created, _) = try MarkerCommands.create(body("{\(quad)}"), session: session.place, context)
        let (_, batch) = try MarkerCommands.update(
            created, session: session.place, body(#"{"label":"x"}"#), expectedVersion: nil, context)
        #expect(batch.events.map(\.type) == [.markerUpdated])
    }

    @Test func staleVersionIsAConflictCarryingTheCurrentOne() throws {
        let (created, _) = try MarkerCommands.create(body("{\(quad)}"), session: session.place, context)
        do {
            _ = try MarkerCommands.update(
                created, session: session.place, body(#"{"label":"x"}"#), expectedVersion: 7, context)
            Issue.record("expected a conflict")
        } catch let error as DomainError {
            #expect(error.code == .versionConflict)
            #expect(error.details["current_version"] == .integer(1))
        }
    }

    @Test func workSessionStatusAndTimes() throws {
        let space = Space(
            id: session.spaceID, key: "k", name: "n", version: 1, createdAt: context.now, updatedAt: context.now)
        #expect(throws: DomainError.self) {
            try WorkSessionCommands.create(body(#"{"status":"finished"}"#), space: space, context)
        }
        let (created, _) = try WorkSessionCommands.create(body(#"{"session_type":"repair"}"#), space: space, context)
        #expect(created.status == .draft)
        #expect(created.completedAt == nil)
        let (done, _) = try WorkSessionCommands.update(
            created, body(#"{"status":"done"}"#), expectedVersion: nil, context)
        #expect(done.completedAt == context.now)
    }

    @Test func spaceCreateNeedsKeyAndName() throws {
        for (json, expected) in [
            (#"{"name":"n"}"#, "key"), (#"{"key":"k"}"#, "name"), (#"{"key":"a b","name":"n"}"#, "key"),
            (#"{"key":"k","name":"n","active":"yes"}"#, "active"),
            (#"{"key":"k","name":"n","scan_url":"no url"}"#, "scan_url"),
        ] {
            do {
                _ = try SpaceCommands.create(body(json), context)
                Issue.record("expected a validation error for \(json)")
            } catch {
                #expect(field(of: error) == expected)
            }
        }
    }

    @Test func spaceURLsAreHTTPOrHTTPSWithAHost() throws {
        for url in [
            "javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<script>x</script>", "file:///etc/passwd",
            "vbscript:x", "http:/x", "https://", "https:///path", "ftp://host/x",
        ] {
            do {
                _ = try SpaceCommands.create(body(#"{"key":"k","name":"n","preview_url":"\#(url)"}"#), context)
                Issue.record("\(url) was accepted")
            } catch {
                #expect(field(of: error) == "preview_url", "\(url)")
            }
        }
        let (space, _) = try SpaceCommands.create(
            body(
                #"{"key":"k","name":"n","preview_url":"HTTPS://cdn.example.com/a.png","#
                    + #""scan_url":"http://10.0.0.2:9000/s"}"#
            ), context)
        #expect(space.previewURL == "HTTPS://cdn.example.com/a.png")
        #expect(space.scanURL == "http://10.0.0.2:9000/s")
    }

    @Test func entityIDsAreLowercased() {
        #expect(EntityID("ABCDEF00-1111-4111-8111-111111111111")?.description == "abcdef00-1111-4111-8111-111111111111")
        #expect(EntityID("abcdef00111141118111111111111111") == nil)
        #expect(EntityID.random().description.count == 36)
    }
}

/// PostgreSQL's text and jsonb cannot hold U+0000: a request carrying it is refused as
/// invalid (naming the field) instead of failing at the database as a 500.
@Suite struct NULCharacterTests {
    func reader(_ json: String) throws -> FieldReader {
        try FieldReader(body: JSONParser.parse(Array(json.utf8)))
    }

    @Test(arguments: [
        (#"{"label":"a\u0000b"}"#, "label"),
        (#"{"meta":{"k":"a\u0000"}}"#, "meta"),
        (#"{"meta":{"k\u0000":1}}"#, "meta"),
        (#"{"meta":{"deep":[{"x":["\u0000"]}]}}"#, "meta"),
    ])
    func aNULIsAnInvalidField(_ json: String, _ field: String) throws {
        let body = try reader(json)
        do {
            if field == "label" {
                _ = try body.string("label", maxLength: 200)
            } else {
                _ = try body.object("meta")
            }
            Issue.record("accepted \(json)")
        } catch let error as DomainError {
            #expect(error.code == .invalidField)
            #expect(error.field == field)
            #expect(error.message.contains("U+0000"))
        }
    }

    @Test func textWithoutNULPasses() throws {
        let body = try reader(#"{"label":"a\u0001b","meta":{"k":["\u00e9"]}}"#)
        #expect(try body.string("label", maxLength: 200) == "a\u{1}b")
        #expect(try body.object("meta") != nil)
    }
}
