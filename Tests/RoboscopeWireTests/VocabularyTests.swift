import Foundation
import Testing
import RoboscopeWire

/// The event types are spelled once, in `EventType`: every quoted event type in the SQL
/// functions, the console, the kit, the CLI and the load generator must be one of them,
/// so that a renamed or misspelt type fails here and not in a projection that silently
/// folds nothing.
@Suite struct VocabularyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The folders searched, and the file names they hold that are read.
    static let places: [(folder: String, suffix: String)] = [
        ("schema/functions", ".sql"), ("console", ".js"), ("Sources/RoboscopeKit", ".swift"),
        ("Sources/roboscope-client", ".swift"), ("Sources/gateway-load", ".swift"),
    ]

    /// `'marker.created'`, `"work_session.lock_broken"`, a type in backticks.
    static let literal = try! NSRegularExpression(
        pattern: #"['"`]((?:space|work_session|marker|marker_details|token_revocation)\.[a-z_]+)['"`]"#)

    static func literals() throws -> [(file: String, type: String)] {
        var found: [(String, String)] = []
        for place in places {
            let folder = root.appendingPathComponent(place.folder)
            let files =
                FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)?
                .compactMap { $0 as? URL }.filter { $0.lastPathComponent.hasSuffix(place.suffix) } ?? []
            for file in files {
                let text = try String(contentsOf: file, encoding: .utf8)
                let range = NSRange(text.startIndex..., in: text)
                for match in literal.matches(in: text, range: range) {
                    guard let type = Range(match.range(at: 1), in: text) else { continue }
                    found.append((file.path.replacingOccurrences(of: root.path + "/", with: ""), String(text[type])))
                }
            }
        }
        return found
    }

    @Test func everyEventTypeSpelledOutsideTheVocabularyIsInIt() throws {
        let known = Set(EventType.all.map(\.rawValue))
        let found = try Self.literals()
        #expect(found.count > 40, "the search finds the types the SQL folds and the console shows")
        let unknown = found.filter { !known.contains($0.type) }
        #expect(unknown.isEmpty, "not in EventType.all: \(unknown.map { "\($0.file): \($0.type)" })")
    }

    @Test func streamTypesAreTheEventTypesPrefixes() {
        let streams = Set(StreamType.allCases.map(\.rawValue))
        for type in EventType.all {
            let prefix = String(type.rawValue.prefix { $0 != "." })
            #expect(streams.contains(prefix), "\(type) names no stream type")
        }
    }

    /// The kit, the CLI and the console match error codes through `ErrorCode`, never by
    /// a string of their own: none of them quotes a code.
    @Test func theClientsSpellNoErrorCodeByHand() throws {
        let codes = Set(ErrorCode.all.map(\.rawValue))
        #expect(codes.count == ErrorCode.all.count, "each code once")
        var quoted: [String] = []
        for (folder, suffix) in [
            ("Sources/RoboscopeKit", ".swift"), ("Sources/roboscope-client", ".swift"),
            ("console", ".js"),
        ] {
            let files =
                FileManager.default.enumerator(
                    at: Self.root.appendingPathComponent(folder),
                    includingPropertiesForKeys: nil)?
                .compactMap { $0 as? URL }.filter { $0.lastPathComponent.hasSuffix(suffix) } ?? []
            for file in files {
                let text = try String(contentsOf: file, encoding: .utf8)
                for code in codes where text.contains("\"\(code)\"") || text.contains("'\(code)'") {
                    quoted.append("\(file.lastPathComponent): \(code)")
                }
            }
        }
        #expect(quoted.isEmpty, "spelled by hand: \(quoted)")
    }

    /// The kit and the CLI name WebSocket ops through `WireOp`: no `"op": "..."` literal,
    /// no `case "..."` or `== "..."` on an op name.
    @Test func theClientsSpellNoOpByHand() throws {
        let names = WireOp.allCases.map(\.rawValue).joined(separator: "|")
        let byHand = try NSRegularExpression(
            pattern: #""op"\s*:\s*"[a-z]|(case|==) "("# + names + #")""#)
        var found: [String] = []
        for folder in ["Sources/RoboscopeKit", "Sources/RoboscopeKitTesting", "Sources/roboscope-client"] {
            let files =
                FileManager.default.enumerator(
                    at: Self.root.appendingPathComponent(folder), includingPropertiesForKeys: nil)?
                .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
            for file in files {
                let text = try String(contentsOf: file, encoding: .utf8)
                for match in byHand.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    guard let range = Range(match.range, in: text) else { continue }
                    found.append("\(file.lastPathComponent): \(text[range])")
                }
            }
        }
        #expect(found.isEmpty, "ops spelled by hand: \(found)")
    }
}
