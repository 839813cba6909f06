import Foundation
import Testing

/// docs/operations.md's configuration reference is what `roboscope settings` prints from
/// the declarations the flags are parsed with.
@Suite struct SettingsReferenceTests {
    @Test func theReferenceIsTheDeclaredSettings() async throws {
        let printed = try await CommandRunner.roboscope(["settings"])
        #expect(printed.status == 0)
        let operations = try String(
            contentsOf: TestDatabase.repositoryRoot.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        guard let begin = operations.range(of: "<!-- settings:begin"),
            let end = operations.range(of: "<!-- settings:end -->")
        else {
            throw TestFailure("docs/operations.md has no settings markers")
        }
        let section = operations[begin.upperBound..<end.lowerBound].split(
            separator: "\n", omittingEmptySubsequences: false
        ).dropFirst()
        #expect(
            section.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
                == printed.output.trimmingCharacters(in: .whitespacesAndNewlines),
            "regenerate the table with `roboscope settings`")
    }
}
