import Foundation
import RoboscopeDomain

/// Builders for the entities most tests need.
struct Fixtures {
    let client: HTTPClient

    static let quad: [String: JSONValue] = ["p1": [0, 0, 1], "p2": [2, 0, 1], "p3": [2, 0, 4], "p4": [0, 0, 4]]

    /// `quad`'s corners in the work session `session` (as the API answered it).
    static func markerFields(in session: JSONValue) -> [String: JSONValue] {
        var fields = quad
        fields["work_session_id"] = session["id"]!
        return fields
    }

    /// A new marker's body: `quad`'s corners in the work session `session`, with `extra`.
    static func markerBody(session: String, _ extra: [String: JSONValue] = [:]) -> JSONValue {
        var body = quad
        body["work_session_id"] = .string(session)
        body.merge(extra) { $1 }
        return .object(body)
    }

    static func uniqueKey(_ prefix: String = "space") -> String {
        "\(prefix)-\(UInt64.random(in: 0...UInt64.max))"
    }

    func space(_ extra: [String: JSONValue] = [:]) async throws -> JSONValue {
        var body: [String: JSONValue] = ["key": .string(Self.uniqueKey()), "name": "Test space"]
        body.merge(extra) { $1 }
        let reply = try await client.post("/api/v1/spaces", .object(body))
        guard reply.status == 201 else { throw TestFailure("space create: \(reply.status) \(reply.json)") }
        return reply.json
    }

    /// A new space and a work session in it.
    func spaceAndSession() async throws -> (space: JSONValue, session: JSONValue) {
        let space = try await self.space()
        return (space, try await session(in: space))
    }

    func session(in space: JSONValue, _ extra: [String: JSONValue] = [:]) async throws -> JSONValue {
        var body: [String: JSONValue] = ["space_id": space["id"]!, "session_type": "inspection"]
        body.merge(extra) { $1 }
        let reply = try await client.post("/api/v1/work-sessions", .object(body))
        guard reply.status == 201 else { throw TestFailure("session create: \(reply.status) \(reply.json)") }
        return reply.json
    }

    func marker(in session: JSONValue, _ extra: [String: JSONValue] = [:]) async throws -> JSONValue {
        let reply = try await client.post("/api/v1/markers", Self.markerBody(session: Self.id(session), extra))
        guard reply.status == 201 else { throw TestFailure("marker create: \(reply.status) \(reply.json)") }
        return reply.json
    }

    static func id(_ value: JSONValue) -> String { value["id"]!.string! }
}

/// `2026-11-22T01:24:59Z`: whole seconds, UTC.
func isWireTimestamp(_ value: JSONValue?) -> Bool {
    guard let text = value?.string else { return false }
    return text.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"#, options: .regularExpression) != nil
}
