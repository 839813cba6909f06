import Foundation
import Testing
import RoboscopeDomain

/// Markers by place (`near` + `range`, `bbox`, `space_id`) and keyset paging of the lists.
@Suite struct MarkerQueriesTests {
    static let server = LazyServer("marker_queries")

    /// A quad of 1 x 1 m centred on (x, z).
    static func quad(_ session: String, x: Double, z: Double) -> JSONValue {
        [
            "work_session_id": .string(session), "p1": [.number(x - 0.5), 0, .number(z - 0.5)],
            "p2": [.number(x + 0.5), 0, .number(z - 0.5)],
            "p3": [.number(x + 0.5), 0, .number(z + 0.5)], "p4": [.number(x - 0.5), 0, .number(z + 0.5)],
        ]
    }

    /// The centre as the test works it out: the mean of the four corners.
    static func centre(_ marker: JSONValue) -> (x: Double, z: Double) {
        let points = ["p1", "p2", "p3", "p4"].map { marker[$0]!.array!.map { $0.double! } }
        return (points.map { $0[0] }.reduce(0, +) / 4, points.map { $0[2] }.reduce(0, +) / 4)
    }

    func placed() async throws -> (HTTPClient, space: String, sessions: [String], markers: [JSONValue]) {
        let (server, _) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        let space = try await fixtures.space()
        var generator = SystemRandomNumberGenerator()
        var sessions: [String] = []
        var markers: [JSONValue] = []
        for _ in 0..<2 {
            let session = Fixtures.id(try await fixtures.session(in: space))
            sessions.append(session)
            let items = (0..<150).map { _ in
                Self.quad(
                    session, x: Double.random(in: -20...20, using: &generator),
                    z: Double.random(in: 0...60, using: &generator))
            }
            let reply = try await server.client.post("/api/v1/markers/bulk", ["markers": .array(items)])
            guard reply.status == 201 else { throw TestFailure("bulk: \(reply.status)") }
            markers += reply.json.array ?? []
        }
        // Another space with markers in the same places must never show up.
        let other = Fixtures.id(try await fixtures.session(in: try await fixtures.space()))
        _ = try await server.client.post(
            "/api/v1/markers/bulk",
            ["markers": .array((0..<50).map { Self.quad(other, x: Double($0 % 10), z: Double($0)) })])
        return (server.client, Fixtures.id(space), sessions, markers)
    }

    @Test func nearAndBoxEqualABruteForceFilter() async throws {
        let (client, space, sessions, markers) = try await placed()
        for (x, z, range) in [(0.0, 30.0, 8.0), (-15.0, 5.0, 12.5), (19.0, 59.0, 3.0), (0.0, 0.0, 100.0)] {
            let reply = try await client.get("/api/v1/markers?space_id=\(space)&near=\(x),\(z)&range=\(range)")
            #expect(reply.status == 200)
            let distance = { (marker: JSONValue) -> Double in
                let c = Self.centre(marker)
                return ((c.x - x) * (c.x - x) + (c.z - z) * (c.z - z)).squareRoot()
            }
            let expected = markers.filter { distance($0) <= range }.sorted { distance($0) < distance($1) }.map {
                $0["id"]!
            }
            #expect(reply.json.array?.map { $0["id"]! } == expected, "near \(x),\(z) within \(range)")
            // Narrowed to one work session.
            let inSession = try await client.get(
                "/api/v1/markers?work_session_id=\(sessions[0])&near=\(x),\(z)&range=\(range)")
            #expect(
                Set(inSession.json.array?.map { $0["id"]! } ?? [])
                    == Set(
                        markers.filter {
                            $0["work_session_id"]?.string == sessions[0] && distance($0) <= range
                        }.map { $0["id"]! }))
        }
        let nearest = try await client.get("/api/v1/markers?space_id=\(space)&near=0,30&range=1000&limit=5")
        #expect(nearest.json.count == 5)

        for (minX, minZ, maxX, maxZ) in [(-5.0, 10.0, 5.0, 20.0), (-20.0, 0.0, 20.0, 60.0), (3.0, 3.0, 3.5, 3.5)] {
            let reply = try await client.get("/api/v1/markers?space_id=\(space)&bbox=\(minX),\(minZ),\(maxX),\(maxZ)")
            let expected = Set(
                markers.filter {
                    let c = Self.centre($0)
                    return c.x >= minX && c.x <= maxX && c.z >= minZ && c.z <= maxZ
                }.map { $0["id"]! })
            #expect(Set(reply.json.array?.map { $0["id"]! } ?? []) == expected, "bbox \(minX),\(minZ),\(maxX),\(maxZ)")
        }
        // Without a place, space_id lists every marker of the space's sessions.
        #expect(try await client.get("/api/v1/markers?space_id=\(space)").json.count == markers.count)
    }

    /// A space's list and a box are sorted over every match (no index gives their order)
    /// and then read by the page's rows alone: a box lists the space's markers inside it
    /// in the space list's order, and pages, each after the last, add up to the list (a
    /// list out of the order the keyset follows would page into another sequence).
    @Test func aSpacesListAndABoxComeInOrderAndPageWhole() async throws {
        let (client, space, _, _) = try await placed()
        let list = try await client.get("/api/v1/markers?space_id=\(space)").json.array ?? []
        let box = try await client.get("/api/v1/markers?space_id=\(space)&bbox=-10,10,10,50").json.array ?? []
        #expect(
            box
                == list.filter {
                    let c = Self.centre($0)
                    return c.x >= -10 && c.x <= 10 && c.z >= 10 && c.z <= 50
                }, "the box keeps the list's order")
        #expect(box.count > 40 && box.allSatisfy { $0["details"]?["center_location_cross"] != nil })
        for (query, whole) in [("space_id=\(space)", list), ("space_id=\(space)&bbox=-10,10,10,50", box)] {
            var paged: [JSONValue] = []
            var after: String?
            repeat {
                let page =
                    try await client.get("/api/v1/markers?\(query)&limit=40" + (after.map { "&after=\($0)" } ?? ""))
                    .json.array ?? []
                paged += page
                after = page.count == 40 ? page.last!["id"]!.string! : nil
            } while after != nil
            #expect(paged == whole, "\(query): the pages are the list")
        }
    }

    @Test func badPlacesAndPagesAreRefusedNamingTheParameter() async throws {
        let (server, _) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        let session = Fixtures.id(try await fixtures.session(in: try await fixtures.space()))
        let base = "/api/v1/markers?work_session_id=\(session)"
        let cases: [(String, String)] = [
            ("&near=1&range=3", "near"), ("&near=1,x&range=3", "near"), ("&near=1,2", "range"),
            ("&near=1,2&range=-3", "range"),
            ("&range=3", "range"), ("&bbox=1,2,3", "bbox"), ("&bbox=3,0,1,5", "bbox"),
            ("&near=1,2&range=3&bbox=0,0,1,1", "bbox"),
            ("&limit=0", "limit"), ("&limit=10001", "limit"), ("&limit=ten", "limit"), ("&after=nope", "after"),
            ("&after=\(UUID().uuidString)", "after"), ("&near=1,2&range=3&after=\(session)", "after"),
        ]
        for (query, field) in cases {
            let reply = try await server.client.get(base + query)
            #expect(reply.status == 400, "\(query)")
            #expect(reply.json["error"]?["field"]?.string == field, "\(query)")
        }
        #expect(try await server.client.get("/api/v1/markers").json["error"]?["field"] == "work_session_id")
    }

    @Test func listsPageWithLinksToTheNextPage() async throws {
        let (server, _) = try await Self.server.get()
        let fixtures = Fixtures(client: server.client)
        let space = try await fixtures.space()
        let session = Fixtures.id(try await fixtures.session(in: space))
        let items: [JSONValue] = (0..<25).map { Self.quad(session, x: Double($0), z: 0) }
        let created = try await server.client.post("/api/v1/markers/bulk", ["markers": .array(items)]).json.array ?? []
        let all = try await server.client.get("/api/v1/markers?work_session_id=\(session)")
        #expect(all.header("Link") == nil, "no next page under the default limit")

        var path: String? = "/api/v1/markers?work_session_id=\(session)&limit=10"
        var pages: [[JSONValue]] = []
        while let next = path {
            let page = try await server.client.get(next)
            #expect(page.status == 200)
            pages.append(page.json.array ?? [])
            path = page.header("Link").flatMap { link in
                link.range(of: #"^<([^>]+)>; rel="next"$"#, options: .regularExpression).map { _ in
                    String(link.dropFirst().prefix { $0 != ">" })
                }
            }
        }
        #expect(pages.map(\.count) == [10, 10, 5])
        #expect(pages.flatMap { $0 } == all.json.array!, "the pages are the list, in order")
        #expect(Set(created.map { $0["id"]! }) == Set(pages.flatMap { $0 }.map { $0["id"]! }))

        // A page continues after its last item even when that item was deleted since.
        let firstPage = pages[0]
        _ = try await server.client.delete("/api/v1/markers/\(firstPage.last!["id"]!.string!)")
        let after = try await server.client.get(
            "/api/v1/markers?work_session_id=\(session)&limit=10&after=\(firstPage.last!["id"]!.string!)")
        #expect(after.json.array?.first == pages[1].first)

        // Spaces and work sessions page the same way.
        for _ in 0..<2 { _ = try await fixtures.session(in: space) }
        let sessions = try await server.client.get("/api/v1/work-sessions?space_id=\(Fixtures.id(space))&limit=2")
        #expect(sessions.json.count == 2)
        #expect(sessions.header("Link")?.contains("after=\(sessions.json[1]!["id"]!.string!)") == true)
        let spaces = try await server.client.get("/api/v1/spaces?limit=1")
        #expect(spaces.json.count == 1)
        #expect(spaces.header("Link")?.hasPrefix("</api/v1/spaces?limit=1&after=") == true)
    }
}
