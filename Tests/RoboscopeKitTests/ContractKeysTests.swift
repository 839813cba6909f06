import Foundation
import Testing

@testable import RoboscopeGeometry
@testable import RoboscopeKit

/// The kit spells its models' JSON keys in `CodingKeys`, as the iOS app does. Each of
/// those keys must be a property of the model's schema in docs/openapi.yaml (the contract
/// the server is tested against), and each property a response schema requires must be
/// one of them: a misspelt or forgotten key fails here, not in a field that silently
/// decodes as nil.
@Suite struct ContractKeysTests {
    static let specification = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("docs/openapi.yaml")

    /// A schema of `components.schemas`: its properties and those it requires.
    struct Schema {
        var properties: Set<String> = []
        var required: Set<String> = []
    }

    /// The schemas' top-level properties, read from the file's fixed layout (a schema
    /// at four spaces, its `required` and `properties` at six, their items at six or eight).
    static func schemas() throws -> [String: Schema] {
        let text = try String(contentsOf: specification, encoding: .utf8)
        var schemas: [String: Schema] = [:]
        var inSchemas = false
        var current: String?
        var list: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") { inSchemas = false }
            if line == "  schemas:" {
                inSchemas = true
                continue
            }
            guard inSchemas else { continue }
            let indent = line.prefix { $0 == " " }.count
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if indent == 4, trimmed.hasSuffix(":") {
                current = String(trimmed.dropLast())
                schemas[current!] = Schema()
                list = nil
            } else if let current, list == "required:", indent == 6 || indent == 8, trimmed.hasPrefix("- ") {
                schemas[current]?.required.insert(String(trimmed.dropFirst(2)))
            } else if indent == 6 {
                list = trimmed
            } else if let current, list == "properties:", indent == 8, trimmed.hasSuffix(":") {
                schemas[current]?.properties.insert(String(trimmed.dropLast()))
            }
        }
        return schemas
    }

    /// Each model's keys and its schema; `response` when the server sends it (so every
    /// property the schema requires must be decoded).
    static let models: [(name: String, keys: [String], schema: String, response: Bool)] = [
        ("Space", Space.CodingKeys.allCases.map(\.rawValue), "Space", true),
        ("WorkSession", WorkSession.CodingKeys.allCases.map(\.rawValue), "WorkSession", true),
        ("NewWorkSession", NewWorkSession.CodingKeys.allCases.map(\.rawValue), "WorkSessionCreate", false),
        ("Marker", Marker.CodingKeys.allCases.map(\.rawValue), "Marker", true),
        (
            "MarkerDetails",
            MarkerDetails.CodingKeys.allCases.map(\.rawValue) + MarkerMeasurements.CodingKeys.allCases.map(\.rawValue),
            "MarkerDetails", true
        ),
        ("NewMarker", NewMarker.CodingKeys.allCases.map(\.rawValue), "MarkerCreate", false),
        ("MarkerPatch", MarkerPatch.CodingKeys.allCases.map(\.rawValue), "MarkerPatch", false),
        ("TopicEvent", TopicEvent.CodingKeys.allCases.map(\.rawValue), "EventMessage", true),
        ("ChangesPage", ChangesPage.CodingKeys.allCases.map(\.rawValue), "ChangesPage", true),
        ("LockGrant", LockGrant.CodingKeys.allCases.map(\.rawValue), "LockAcquireReply", true),
        ("LockState", LockState.CodingKeys.allCases.map(\.rawValue), "LockState", true),
        (
            "RoboscopeError's body", RoboscopeError.ErrorEnvelope.Body.CodingKeys.allCases.map(\.rawValue), "ErrorBody",
            true
        ),
    ]

    @Test func theLayoutIsRead() throws {
        let schemas = try Self.schemas()
        #expect(schemas.count > 40)
        #expect(schemas["Marker"]?.properties.contains("work_session_id") == true)
        #expect(schemas["Marker"]?.required.contains("calibrated_data") == true)
    }

    @Test(arguments: models.map(\.name))
    func theModelsKeysAreItsSchemasProperties(_ name: String) throws {
        let model = try #require(Self.models.first { $0.name == name })
        let schema = try #require(try Self.schemas()[model.schema], "docs/openapi.yaml has no schema \(model.schema)")
        let keys = Set(model.keys)
        #expect(
            keys.subtracting(schema.properties).isEmpty,
            "not in \(model.schema): \(keys.subtracting(schema.properties))")
        if model.response {
            #expect(
                schema.required.subtracting(keys).isEmpty,
                "\(model.schema) requires, \(name) does not decode: \(schema.required.subtracting(keys))")
        }
    }
}
