import Foundation
import Testing

/// A part of a document that a command prints, between `<!-- NAME:begin … -->` and
/// `<!-- NAME:end -->`: the document holds what `roboscope COMMAND` prints now.
enum GeneratedSection {
    static func expectCurrent(
        _ name: String, in document: String, printedBy command: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let printed = try await CommandRunner.roboscope([command])
        #expect(printed.status == 0, sourceLocation: sourceLocation)
        let text = try String(
            contentsOf: TestDatabase.repositoryRoot.appendingPathComponent(document), encoding: .utf8)
        guard let begin = text.range(of: "<!-- \(name):begin"), let end = text.range(of: "<!-- \(name):end -->")
        else {
            throw TestFailure("\(document) has no \(name) markers")
        }
        // The begin marker's own line is not part of the section.
        let section = text[begin.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            .dropFirst()
        #expect(
            section.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
                == printed.output.trimmingCharacters(in: .whitespacesAndNewlines),
            "regenerate the section with `roboscope \(command)`", sourceLocation: sourceLocation)
    }
}
